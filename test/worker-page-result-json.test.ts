// The page result JSON built from an engine result (DESIGN.md "Results").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { PageResult } from '../src/engine/ocr-engine.js';
import type { PageJobData, StageTimings } from '../src/jobs/job-types.js';
import { pageResultJson } from '../src/worker/page-result-json.js';

const DATA: PageJobData = {
  docId: 'doc',
  sourceUri: 's3://in/a.pdf',
  storage: 's3://scriptorium',
  type: 'pdf',
  firstPage: 4,
  lastPage: 4,
  keys: { source: 'staging/doc/source.pdf', results: 'results/doc/' },
  options: { variant: 'v2', task: 'markdown', mode: 'gundam', dpi: 144 },
  enqueuedAt: 0,
};
const TIMINGS: StageTimings = { queued: 1, fetch: 2, render: 3, preprocess: 4, encode: 5, prefill: 6, decode: 7, postprocess: 8, store: 9, total: 45 };
const READER = { host: 'node-1', backend: 'cpu-avx2', checkpoint: 'sha256:abc', synthetic: false };

const RESULT: PageResult = {
  markdown: '# Title\n\nBody',
  blocks: [
    { type: 'title', text: 'Title', box: [10, 20, 300, 40], boxes: [[10, 20, 300, 40], [10, 50, 300, 70]] },
    { type: 'text', text: 'Body', boxes: [] },
  ],
  rawText: '<|ref|>title<|/ref|>…',
  tokens: { prompt: 900, generated: 12, image: 890 },
  finish: 'eos',
  timings: { preprocess: 4, encode: 5, prefill: 6, decode: 7, postprocess: 8 },
};

test('blocks keep type, text and the first box; a block without a box has no box field', () => {
  assert.deepEqual(pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1).blocks, [
    { type: 'title', text: 'Title', box: [10, 20, 300, 40] },
    { type: 'text', text: 'Body' },
  ]);
});

test('the result names the source page, the model, the tokens, the timings and the worker', () => {
  const json = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 2);
  assert.deepEqual(
    { source: json.source, model: json.model, tokens: json.tokens, finish: json.finish, timings_ms: json.timings_ms, worker: json.worker },
    {
      source: { uri: 's3://in/a.pdf', page: 4 },
      model: { variant: 'v2', task: 'markdown', mode: 'gundam', checkpoint: 'sha256:abc', synthetic: false },
      tokens: { prompt: 900, image: 890, generated: 12 },
      finish: 'eos',
      timings_ms: TIMINGS,
      worker: { host: 'node-1', backend: 'cpu-avx2', attempt: 2 },
    },
  );
});

test('the raw decoded text is not part of the result', () => {
  assert.equal('rawText' in pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1), false);
});

test('a result without a checkpoint identity or host is refused, not written with empty provenance', () => {
  assert.throws(() => pageResultJson(DATA, 4, RESULT, TIMINGS, { ...READER, checkpoint: '' }, 1), /model\.checkpoint: /);
  assert.throws(() => pageResultJson(DATA, 4, RESULT, TIMINGS, { ...READER, host: '' }, 1), /worker\.host: /);
});
