// The viewer's HTML pages, rendered on the server: the documents list, a page's shell around the
// shared page view (output/page-view.ts) with its navigation and retry button, and the login form of
// `serve`. Everything from storage is escaped; the pages carry no inline script or style, only links
// to the viewer's static files, as the Content-Security-Policy demands.
import { escapeHtml } from '../output/safe-markdown.js';

export const VIEWER_PATH = '/viewer';
export const STATIC_PATH = `${VIEWER_PATH}/static`;

/** One row of the documents list. */
export interface DocumentEntry {
  docId: string;
  /** The input it was read from, once assembled. */
  uri?: string;
  state: 'done' | 'failed pages' | 'being read' | 'unreadable';
  /** Its pages, once assembled; else the page results stored so far. */
  pages: number;
  failedPages?: number;
  /** Pages that need review. */
  flagged?: number;
  /** The mean confidence of its pages, when recorded. */
  confidence?: number;
  /** Why its document.json cannot be read (state 'unreadable'). */
  problem?: string;
}

/** What the page shell shows around the page view. */
export interface PageShell {
  docId: string;
  uri: string;
  page: number;
  pageCount: number;
  /** The next page that needs review (after this one, else the first), if any other. */
  nextFlagged?: number;
  /** Whether the retry button is offered, and why not when it is shown disabled. */
  retry?: { enabled: true } | { enabled: false; reason: string };
  /** The page was queued again just now. */
  retried: boolean;
  /** The shared page view's markup. */
  pageView: string;
}

export function pageUrl(docId: string, page: number): string {
  return `${VIEWER_PATH}/documents/${docId}/pages/${page}`;
}

export function pageImageUrl(docId: string, page: number): string {
  return `${pageUrl(docId, page)}/image.jpg`;
}

export function documentsPage(entries: readonly DocumentEntry[]): string {
  const rows = entries.map((entry) => {
    const name = escapeHtml(entry.uri ?? entry.docId);
    const link = entry.state === 'done' || entry.state === 'failed pages' ? `<a href="${pageUrl(entry.docId, 1)}">${name}</a>` : name;
    const state = entry.problem === undefined ? entry.state : `${entry.state}: ${escapeHtml(entry.problem)}`;
    return `<tr data-doc-id="${entry.docId}"><td>${link}<br><code>${entry.docId}</code></td><td>${state}</td><td>${entry.pages}</td><td>${entry.failedPages ?? ''}</td><td>${entry.flagged ?? ''}</td><td>${entry.confidence === undefined ? '' : entry.confidence.toFixed(2)}</td></tr>`;
  });
  const body =
    entries.length === 0
      ? '<p>No documents in this storage yet.</p>'
      : `<table class="documents"><thead><tr><th>document</th><th>state</th><th>pages</th><th>failed</th><th>flagged</th><th>confidence</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>`;
  return layout('Documents', `<h1>Documents</h1>\n${body}`);
}

export function pageShellPage(shell: PageShell): string {
  const { docId, page, pageCount } = shell;
  const links = [
    `<a href="${VIEWER_PATH}/">Documents</a>`,
    `<strong>${escapeHtml(shell.uri)}</strong>`,
    page > 1 ? `<a rel="prev" href="${pageUrl(docId, page - 1)}">← previous</a>` : '',
    `<span>page ${page} of ${pageCount}</span>`,
    page < pageCount ? `<a rel="next" href="${pageUrl(docId, page + 1)}">next →</a>` : '',
    shell.nextFlagged === undefined ? '' : `<a id="next-flagged" href="${pageUrl(docId, shell.nextFlagged)}">next page needing review (${shell.nextFlagged})</a>`,
    retryControl(shell),
    '<span class="keys">keys: j/k or →/← pages, n next page needing review</span>',
  ];
  const notice = shell.retried ? '<p class="notice">This page was queued again: the page and the document are updated once a worker has read it.</p>\n' : '';
  return layout(`${shell.uri}: page ${page}`, `<nav class="page-nav">${links.filter((link) => link !== '').join('\n')}</nav>\n${notice}${shell.pageView}`);
}

export function loginPage(message?: string): string {
  const note = message === undefined ? '' : `<p class="failed">${escapeHtml(message)}</p>\n`;
  return layout(
    'Sign in',
    `<div class="login"><h1>Scriptorium viewer</h1>
${note}<form method="post" action="${VIEWER_PATH}/login">
<label for="key">API key</label>
<input type="password" id="key" name="key" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form></div>`,
  );
}

/** A page that says why an action was not done, with a way back. */
export function messagePage(title: string, message: string, back: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>\n<p><a href="${escapeHtml(back)}">back</a></p>`);
}

function retryControl(shell: PageShell): string {
  if (shell.retry === undefined) return '';
  if (!shell.retry.enabled) return `<button type="button" disabled>Retry this page</button> <span class="disabled-reason">${escapeHtml(shell.retry.reason)}</span>`;
  return `<form class="retry-form" method="post" action="${pageUrl(shell.docId, shell.page)}/retry"><button type="submit" id="retry">Retry this page</button></form>`;
}

function layout(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${STATIC_PATH}/favicon.svg">
<link rel="stylesheet" href="${STATIC_PATH}/viewer.css">
<link rel="stylesheet" href="${STATIC_PATH}/page-view.css">
<script src="${STATIC_PATH}/viewer.js" defer></script>
</head>
<body>
${body}
</body>
</html>
`;
}
