// Page markdown as HTML that runs and loads nothing of a document's own text: CommonMark and GFM
// through marked. The models write tables as HTML, so raw HTML is kept, but only table and simple text
// tags, with only colspan and rowspan attributes: anything else a document's text could smuggle in
// (scripts, event handlers, links to other schemes) is shown as text. Used by every HTML view of results.
import { Marked } from 'marked';

const ALLOWED_TAGS = new Set(['table', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th', 'caption', 'br', 'sup', 'sub', 'b', 'i', 'u', 'em', 'strong', 'center']);
const ALLOWED_ATTRIBUTE = /\b(colspan|rowspan)\s*=\s*["']?(\d{1,3})["']?/gi;

/** Links and images keep web and relative targets; other schemes (javascript:, data:) keep only their text. */
const SAFE_URL = /^(https?:|[^:/?#]*(?:[/?#]|$))/i;

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: ({ text }) => allowedHtml(text),
    link({ href, tokens }) {
      const text = this.parser.parseInline(tokens);
      return SAFE_URL.test(href) ? `<a href="${escapeHtml(href)}">${text}</a>` : text;
    },
    image: ({ href, text }) => (SAFE_URL.test(href) ? `<img src="${escapeHtml(href)}" alt="${escapeHtml(text)}">` : escapeHtml(text)),
  },
});

export function markdownHtml(text: string): string {
  return markdown.parse(text) as string;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Raw HTML from a page: allowed tags keep their colspan and rowspan; every other tag is escaped. */
function allowedHtml(html: string): string {
  return html.replace(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>/g, (tag, slash: string, name: string, attributes: string) => {
    if (!ALLOWED_TAGS.has(name.toLowerCase())) return escapeHtml(tag);
    const kept = slash === '' ? [...attributes.matchAll(ALLOWED_ATTRIBUTE)].map((m) => ` ${m[1].toLowerCase()}="${m[2]}"`).join('') : '';
    return `<${slash}${name.toLowerCase()}${kept}>`;
  });
}
