// The HTML export: one self-contained page with every document page side by side (its image embedded
// as a JPEG data: URI, its boxes as SVG, its reading beside it) in the viewer's own markup and style,
// failed pages noted, and nothing from a document's own text that could run or load anything.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import sharp from 'sharp';

import { parsePageResultJson } from '../../src/jobs/result-json.js';
import { pageResultKey } from '../../src/jobs/storage-layout.js';
import { documentHtml, EXPORT_IMAGE_LONGEST_SIDE } from '../../src/output/document-html.js';
import { VIEWER_ASSETS_DIR } from '../../src/output/page-view.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { FAILED_PAGE, FAILURE_REASON, PAGE_1_BLOCKS, writeViewerDocument } from '../support/viewer-documents.js';

const TRAPS = '<table><tr><td colspan="2" onclick="steal()">Total</td></tr></table>\n\n[home](https://example.com) [trap](javascript:alert(2))';
let dir: string;
let html: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-html-'));
  const storage = new FileStorage(dir);
  const { docId } = await writeViewerDocument(storage);
  // Page 1 gains a block of links and a table with an event handler.
  const key = pageResultKey(docId, 1, 'json');
  const page = parsePageResultJson((await storage.get(key)).toString(), key);
  page.blocks.push({ type: 'text', text: TRAPS, box: [60, 440, 552, 500] });
  await storage.put(key, Buffer.from(JSON.stringify(page)));
  html = await documentHtml(docId, storage);
});
after(() => rm(dir, { recursive: true, force: true }));

/** The markup of one page's section. */
function section(page: number): string {
  const match = new RegExp(`<section class="page-view" id="page-${page}"[\\s\\S]*?</section>`).exec(html);
  assert.ok(match, `page ${page} has a section`);
  return match[0];
}

test('every page is a side-by-side section; a failed page says why; the title is escaped', () => {
  for (const page of [1, 2, 3, 4]) assert.match(section(page), /<figure class="page-image">[\s\S]*<div class="page-text">/);
  assert.match(section(FAILED_PAGE), new RegExp(`<p class="failed">This page could not be read: ${FAILURE_REASON.replace('<', '&lt;').replace('>', '&gt;')}</p>`));
  assert.match(html, /<title>\/in\/minutes &lt;draft&gt;\.pdf<\/title>/);
});

test('each page image is embedded as a JPEG data: URI of at most the export resolution', async () => {
  const images = [...html.matchAll(/(?:href|src)="data:image\/jpeg;base64,([A-Za-z0-9+/=]+)"/g)];
  assert.equal(images.length, 4, 'one image per page, failed pages included');
  const { width, height, format } = await sharp(Buffer.from(images[0][1], 'base64')).metadata();
  assert.equal(format, 'jpeg');
  assert.equal(Math.max(width, height), EXPORT_IMAGE_LONGEST_SIDE);
  assert.ok(Math.abs(width / height - 612 / 792) < 0.01, 'the page keeps its aspect ratio');
});

test("one box per block over the page, in the worker's pixel space, sharing its id with the block's text; low confidence marked", () => {
  const page = section(1);
  assert.match(page, /<svg class="page-boxes" viewBox="0 0 612 792"/);
  const boxes = [...page.matchAll(/<rect class="box type-(\w+)( low)?" data-block="(p1-b\d+)" x="(\d+)" y="(\d+)"/g)];
  assert.equal(boxes.length, PAGE_1_BLOCKS.length + 1);
  assert.deepEqual(boxes.map((box) => [box[1], box[2] !== undefined, box[3]]), [
    ['title', false, 'p1-b0'],
    ['text', true, 'p1-b1'],
    ['table', false, 'p1-b2'],
    ['text', false, 'p1-b3'],
  ]);
  assert.deepEqual([boxes[1][4], boxes[1][5]], ['60', '110']);
  for (const [, , , id] of boxes) assert.match(page, new RegExp(`<div class="block [^"]*" data-block="${id}">`));
  assert.match(page, /<h2>Page 1<\/h2> <span class="confidence">confidence 0\.82 \(lowest 0\.12\)<\/span><\/header>/);
  assert.match(section(2), /<span class="review">needs review<\/span> <span class="flag">repetition<\/span>/);
});

test('tables keep their colspan; scripts, event handlers and javascript: links do not survive; nothing runs', () => {
  assert.match(html, /<table><tr><td colspan="2">Total<\/td><\/tr><\/table>/);
  assert.doesNotMatch(html, /onclick|<script|href="javascript:/);
  assert.match(html, /All present\. &lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /<a href="https:\/\/example\.com">home<\/a> trap/);
});

test("its style is the viewer's page view style sheet, inlined", async () => {
  const css = await readFile(path.join(VIEWER_ASSETS_DIR, 'page-view.css'), 'utf8');
  assert.ok(html.includes(css), 'viewer/page-view.css is in the page');
  assert.doesNotMatch(html, /<link /);
});
