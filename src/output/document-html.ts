// HTML export of an assembled document: one standalone page, each document page a section rendered
// from its markdown (CommonMark and GFM through marked). The models write tables as HTML, so raw HTML
// is kept, but only table and simple text tags, with only colspan and rowspan attributes: anything
// else a document's own text could smuggle in (scripts, event handlers, links) is shown as text.
import { Marked } from 'marked';

import type { DocumentResultJson } from '../jobs/result-json.js';
import { documentResultKeys, pageResultKey } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';

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

export async function documentHtml(docId: string, storage: Storage): Promise<string> {
  const document = JSON.parse((await storage.get(documentResultKeys(docId).json)).toString('utf8')) as DocumentResultJson;
  const failed = new Map(document.failedPages.map(({ page, reason }) => [page, reason]));
  const sections: string[] = [];
  for (let page = 1; page <= document.source.pages; page++) {
    const reason = failed.get(page);
    const body =
      reason === undefined
        ? (markdown.parse((await storage.get(pageResultKey(docId, page, 'md'))).toString('utf8')) as string)
        : `<p class="failed">This page could not be read: ${escapeHtml(reason)}</p>\n`;
    sections.push(`<section class="page" id="page-${page}">\n${body}</section>`);
  }
  const title = escapeHtml(document.source.uri);
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>${title}</title>
<meta name="generator" content="Scriptorium ${escapeHtml(document.scriptorium?.version ?? '')} (${escapeHtml(document.scriptorium?.commit ?? '')})">
<style>body{max-width:50em;margin:2em auto;font-family:sans-serif}section.page{border-bottom:1px solid #ccc;padding-bottom:1em}table{border-collapse:collapse}td,th{border:1px solid #999;padding:.2em .4em}.failed{color:#a00}</style>
</head>
<body>
${sections.join('\n')}
</body>
</html>
`;
}

/** Raw HTML from a page: allowed tags keep their colspan and rowspan; every other tag is escaped. */
function allowedHtml(html: string): string {
  return html.replace(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>/g, (tag, slash: string, name: string, attributes: string) => {
    if (!ALLOWED_TAGS.has(name.toLowerCase())) return escapeHtml(tag);
    const kept = slash === '' ? [...attributes.matchAll(ALLOWED_ATTRIBUTE)].map((m) => ` ${m[1].toLowerCase()}="${m[2]}"`).join('') : '';
    return `<${slash}${name.toLowerCase()}${kept}>`;
  });
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
