// docId: a hash of the source bytes and the options that change the output.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId, documentIdOfFile } from '../../src/producer/doc-id.js';

const OPTIONS: OcrJobOptions = { variant: 'v2', task: 'markdown', mode: 'gundam', dpi: 144, maxNewTokens: 4096 };
const BYTES = Buffer.from('%PDF-1.7 the same bytes');

test('the same bytes and options give the same docId of 32 hex digits', () => {
  const docId = documentId(BYTES, OPTIONS);
  assert.match(docId, /^[0-9a-f]{32}$/);
  assert.equal(documentId(Buffer.from(BYTES), { ...OPTIONS }), docId);
});

test('the docId does not depend on the key order of the options', () => {
  const reordered: OcrJobOptions = { maxNewTokens: 4096, dpi: 144, mode: 'gundam', task: 'markdown', variant: 'v2' };
  assert.equal(documentId(BYTES, reordered), documentId(BYTES, OPTIONS));
});

test('each option that changes the output changes the docId', () => {
  const variations: OcrJobOptions[] = [
    { ...OPTIONS, variant: 'v1' },
    { ...OPTIONS, task: 'ocr' },
    { ...OPTIONS, mode: 'base' },
    { ...OPTIONS, dpi: 200 },
    { ...OPTIONS, maxNewTokens: 8192 },
    { variant: 'v2', task: 'markdown', mode: 'gundam', dpi: 144 },
    { variant: 'v2', task: 'markdown', mode: 'gundam', longestSide: 1024, maxNewTokens: 4096 },
    { variant: 'v2', task: 'markdown', mode: 'gundam', longestSide: 1288, maxNewTokens: 4096 },
  ];
  const ids = new Set([OPTIONS, ...variations].map((options) => documentId(BYTES, options)));
  assert.equal(ids.size, variations.length + 1);
});

test('docIds of dpi options are the ones made before longestSide existed, so earlier results are still found', () => {
  // sha256 of '{"dpi":144,"maxNewTokens":4096,"mode":"gundam","task":"markdown","variant":"v2"}' then the bytes.
  assert.equal(documentId(BYTES, OPTIONS), 'f22de313b1951a75a9a1e6b809aa6dfe');
});

test('other bytes give another docId', () => {
  assert.notEqual(documentId(Buffer.from('%PDF-1.7 other bytes'), OPTIONS), documentId(BYTES, OPTIONS));
});

test('properties that are not output options do not change the docId', () => {
  const withExtra = { ...OPTIONS, enqueuedBy: 'nightly' } as OcrJobOptions;
  assert.equal(documentId(BYTES, withExtra), documentId(BYTES, OPTIONS));
});

test('a file read as a stream gets the docId of its bytes', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-doc-id-'));
  try {
    // Several of the stream's chunks (64 KiB each).
    const bytes = Buffer.concat([BYTES, Buffer.alloc(200_000, 7)]);
    await writeFile(path.join(dir, 'a.pdf'), bytes);
    assert.equal(await documentIdOfFile(path.join(dir, 'a.pdf'), OPTIONS), documentId(bytes, OPTIONS));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
