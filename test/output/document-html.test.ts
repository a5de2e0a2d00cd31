// The HTML export: one section per page from its markdown, tables kept, failed pages noted, and
// nothing from a document's own text that could run or load anything.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { documentResultKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { documentHtml } from '../../src/output/document-html.js';
import { FileStorage } from '../../src/storage/file-storage.js';

const DOC = 'ef'.repeat(16);
let dir: string;
let html: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-html-'));
  const storage = new FileStorage(dir);
  await storage.put(
    pageResultKey(DOC, 1, 'md'),
    Buffer.from(
      '# Report\n\n<table><tr><td colspan="2" onclick="steal()">Total</td></tr></table>\n\n<script>alert(1)</script>\n\n[home](https://example.com) [trap](javascript:alert(2))\n',
    ),
  );
  const document = {
    docId: DOC,
    source: { uri: '/in/report <draft>.pdf', type: 'pdf', pages: 2 },
    pages: [{ page: 1, status: 'done', key: pageResultKey(DOC, 1, 'json') }],
    failedPages: [{ page: 2, reason: 'timed out after 600 s' }],
    scriptorium: { version: '0.1.0', commit: 'abc' },
  };
  await storage.put(documentResultKeys(DOC).json, Buffer.from(JSON.stringify(document)));
  html = await documentHtml(DOC, storage);
});
after(() => rm(dir, { recursive: true, force: true }));

test('each page is a section rendered from its markdown; a failed page says why', () => {
  assert.match(html, /<section class="page" id="page-1">\n<h1>Report<\/h1>/);
  assert.match(html, /<section class="page" id="page-2">\n<p class="failed">This page could not be read: timed out after 600 s<\/p>/);
  assert.match(html, /<title>\/in\/report &lt;draft&gt;\.pdf<\/title>/);
});

test('tables stay HTML with their colspan; event handlers, scripts and javascript: links do not', () => {
  assert.match(html, /<table><tr><td colspan="2">Total<\/td><\/tr><\/table>/);
  assert.doesNotMatch(html, /onclick|<script|href="javascript:/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /<a href="https:\/\/example\.com">home<\/a> trap/);
});
