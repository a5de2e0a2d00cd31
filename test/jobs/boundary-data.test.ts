// Job data, return values and result JSON read back from Redis or storage are checked against their
// schemas: what is wrong is named, field by field, instead of surfacing later as an odd failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidBoundaryDataError } from '../../src/jobs/boundary-data.js';
import { parseDocumentOutcome, parsePageJobData, type PageJobData } from '../../src/jobs/job-types.js';
import { parsePageResultJson, type PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys } from '../../src/jobs/storage-layout.js';

const DOC_ID = '0123456789abcdef0123456789abcdef';

const PAGE_JOB: PageJobData = {
  docId: DOC_ID,
  sourceUri: '/in/a.pdf',
  storage: 'file:///srv/scriptorium',
  type: 'pdf',
  firstPage: 2,
  lastPage: 2,
  keys: documentKeys(DOC_ID, 'pdf'),
  options: { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 144 },
  enqueuedAt: 1_700_000_000_000,
};

const PAGE_RESULT: PageResultJson = {
  docId: DOC_ID,
  source: { uri: '/in/a.pdf', page: 2 },
  render: { width: 612, height: 792, dpi: 72, pdfPage: { width: 612, height: 792 } },
  model: { variant: 'v1', task: 'markdown', mode: 'tiny', checkpoint: 'sha256:abc', synthetic: true },
  markdown: 'text',
  blocks: [{ type: 'title', text: 'text', box: [0, 0, 10, 10] }],
  tokens: { prompt: 83, image: 73, generated: 8 },
  finish: 'eos',
  timings_ms: { queued: 1, fetch: 1, render: 1, preprocess: 1, encode: 1, prefill: 1, decode: 1, postprocess: 1, store: 1, total: 9 },
  worker: { host: 'h', backend: 'cpu-avx2', attempt: 1 },
  scriptorium: { version: '0.1.0', commit: 'unknown' },
};

test('page job data as the producer writes it reads back unchanged', () => {
  assert.deepEqual(parsePageJobData(JSON.parse(JSON.stringify(PAGE_JOB))), PAGE_JOB);
});

test('page job data with a wrong field is rejected naming every wrong field', () => {
  const damaged = { ...PAGE_JOB, firstPage: 0, options: { ...PAGE_JOB.options, variant: 'v9' } };
  assert.throws(() => parsePageJobData(damaged), (error: unknown) => {
    assert.ok(error instanceof InvalidBoundaryDataError);
    assert.match(error.message, /^page job data is invalid: /);
    assert.match(error.message, /firstPage: /);
    assert.match(error.message, /options\.variant: /);
    return true;
  });
});

test('a page range that ends before it starts is no page job', () => {
  assert.throws(() => parsePageJobData({ ...PAGE_JOB, firstPage: 3, lastPage: 2 }), /lastPage: lastPage is before firstPage/);
});

test('a docId that is no docId is no job data', () => {
  assert.throws(() => parsePageJobData({ ...PAGE_JOB, docId: '../etc' }), /docId: /);
});

test('a page result as the worker writes it reads back unchanged', () => {
  assert.deepEqual(parsePageResultJson(`${JSON.stringify(PAGE_RESULT, null, 2)}\n`, 'results/x/pages/0002.json'), PAGE_RESULT);
});

test('a page result with its flags reads back unchanged; one of an earlier version, without flags and with finish "length", reads as max_tokens', () => {
  const flagged: PageResultJson = { ...PAGE_RESULT, finish: 'max_tokens', flags: ['max_tokens', 'repetition'], needs_review: true, repetition: { start: 3, span: 2, repeats: 40 } };
  assert.deepEqual(parsePageResultJson(JSON.stringify(flagged), 'k.json'), flagged);
  const earlier = parsePageResultJson(JSON.stringify({ ...PAGE_RESULT, finish: 'length' }), 'k.json');
  assert.deepEqual({ finish: earlier.finish, flags: earlier.flags, needs_review: earlier.needs_review }, { finish: 'max_tokens', flags: undefined, needs_review: undefined });
  assert.throws(() => parsePageResultJson(JSON.stringify({ ...PAGE_RESULT, flags: ['tired'] }), 'k.json'), /k\.json is invalid: flags\.0: /);
  assert.throws(() => parsePageResultJson(JSON.stringify({ ...PAGE_RESULT, finish: 'stop' }), 'k.json'), /k\.json is invalid: finish: /);
});

test('a page result that is not JSON, or lacks a field, names its key and the problem', () => {
  assert.throws(() => parsePageResultJson('{"docId": ', 'results/x/pages/0002.json'), /^InvalidBoundaryDataError: results\/x\/pages\/0002\.json is not JSON: /);
  const { markdown: _, ...withoutMarkdown } = PAGE_RESULT;
  assert.throws(() => parsePageResultJson(JSON.stringify(withoutMarkdown), 'k.json'), /^InvalidBoundaryDataError: k\.json is invalid: markdown: /);
});

test('a document return value without its markdown key is no document outcome', () => {
  assert.throws(() => parseDocumentOutcome({ docId: DOC_ID, json: 'j', pages: 1, failedPages: [] }), /a document job return value is invalid: markdown: /);
});
