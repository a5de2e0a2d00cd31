// The searchable PDF of an assembled document, read back with pdftotext (poppler-utils): the
// recognised text is in the original PDF's page, invisible, at its grounding boxes, Unicode intact;
// an image document becomes image pages with the same text layer.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys, documentResultKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { searchablePdf } from '../../src/output/searchable-pdf.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';

const PDFTOTEXT_MISSING = spawnSync('pdftotext', ['-v']).error === undefined ? false : 'pdftotext is not installed (apt-get install poppler-utils)';
const PDF_DOC = 'ab'.repeat(16);
const PNG_DOC = 'cd'.repeat(16);
/** Tolerance of the positions pdftotext reports, in points: glyph extents differ from the box a little. */
const TOLERANCE_PT = 3;

interface Word {
  text: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
}

/** The words pdftotext finds on the first page, with their boxes in points from the top left. */
function wordsOf(file: string): Word[] {
  const html = execFileSync('pdftotext', ['-bbox', file, '-'], { encoding: 'utf8' });
  return [...html.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
    xMin: Number(m[1]),
    yMin: Number(m[2]),
    xMax: Number(m[3]),
    yMax: Number(m[4]),
    text: m[5].replace(/&amp;/g, '&'),
  }));
}

function pageJson(docId: string, render: PageResultJson['render'], blocks: PageResultJson['blocks']): PageResultJson {
  return {
    docId,
    source: { uri: 'test', page: 1 },
    render,
    model: { variant: 'v1', task: 'markdown', mode: 'tiny', checkpoint: 'sha256:test', synthetic: true },
    markdown: blocks.map((block) => block.text).join('\n\n'),
    blocks,
    tokens: { prompt: 1, image: 1, generated: 1 },
    finish: 'eos',
    timings_ms: { queued: 0, fetch: 0, render: 0, preprocess: 0, encode: 0, prefill: 0, decode: 0, postprocess: 0, store: 0, total: 0 },
    worker: { host: 'test', backend: 'cpu', attempt: 1 },
    scriptorium: { version: '0.1.0', commit: 'unknown' },
  };
}

async function storeDocument(storage: FileStorage, docId: string, type: 'pdf' | 'png', source: Buffer, page: PageResultJson): Promise<void> {
  await storage.put(documentKeys(docId, type).source, source);
  await storage.put(pageResultKey(docId, 1, 'json'), Buffer.from(JSON.stringify(page)));
  const document = {
    docId,
    source: { uri: 'test', type, pages: 1 },
    model: page.model,
    pages: [{ page: 1, status: 'done', key: pageResultKey(docId, 1, 'json') }],
    failedPages: [],
    completedAt: new Date(0).toISOString(),
  } as unknown as DocumentResultJson;
  await storage.put(documentResultKeys(docId).json, Buffer.from(JSON.stringify(document)));
}

describe('searchable PDF', { skip: PDFTOTEXT_MISSING }, () => {
  let dir: string;
  let storage: FileStorage;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-searchable-'));
    storage = new FileStorage(path.join(dir, 'storage'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a PDF page gets its text at the grounding boxes, in points, Unicode included', async () => {
    // US Letter rendered at 144 dpi: 2 pixels per point.
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    await storeDocument(storage, PDF_DOC, 'pdf', await makePdf([LETTER], 0), pageJson(PDF_DOC, render, [
      { type: 'title', text: 'Quarterly Übersicht café', box: [144, 144, 1008, 200] },
      { type: 'text', text: 'Revenue grew\nCosts fell', box: [200, 400, 700, 480] },
    ]));
    const file = path.join(dir, 'pdf-doc.pdf');
    await writeFile(file, await searchablePdf(PDF_DOC, storage));
    const words = wordsOf(file);
    assert.deepEqual(words.map((word) => word.text), ['Quarterly', 'Übersicht', 'café', 'Revenue', 'grew', 'Costs', 'fell']);
    const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) <= TOLERANCE_PT, `${what}: ${actual} pt, expected ${expected}`);
    // The title's box is x 72…504 pt, y 72…100 pt: the line starts at its left edge and fills its width.
    near(words[0].xMin, 72, 'title left');
    near(words[2].xMax, 504, 'title right');
    for (const word of words.slice(0, 3)) assert.ok(word.yMin >= 72 - TOLERANCE_PT && word.yMax <= 100 + TOLERANCE_PT, `${word.text} inside the title box`);
    // Two lines in x 100…350 pt, y 200…240 pt: one per half.
    near(words[3].xMin, 100, 'first line left');
    assert.ok(words[3].yMax <= 220 + TOLERANCE_PT && words[3].yMin >= 200 - TOLERANCE_PT, 'first line in the upper half');
    assert.ok(words[5].yMin >= 220 - TOLERANCE_PT && words[5].yMax <= 240 + TOLERANCE_PT, 'second line in the lower half');
  });

  test('an image document becomes image pages, one point per pixel, with the same text layer', async () => {
    const png = await makePng();
    const sharp = (await import('sharp')).default;
    const { width = 0, height = 0 } = await sharp(png).metadata();
    await storeDocument(storage, PNG_DOC, 'png', png, pageJson(PNG_DOC, { width, height }, [{ type: 'text', text: 'Invoice', box: [2, 2, width - 2, Math.round(height / 2)] }]));
    const file = path.join(dir, 'png-doc.pdf');
    await writeFile(file, await searchablePdf(PNG_DOC, storage));
    const [word] = wordsOf(file);
    assert.equal(word.text, 'Invoice');
    assert.ok(Math.abs(word.xMin - 2) <= TOLERANCE_PT, `left edge ${word.xMin}`);
    const pageSize = /<page width="([\d.]+)" height="([\d.]+)"/.exec(execFileSync('pdftotext', ['-bbox', file, '-'], { encoding: 'utf8' }));
    assert.deepEqual([Number(pageSize?.[1]), Number(pageSize?.[2])], [width, height]);
  });
});
