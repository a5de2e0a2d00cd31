// The page result JSON built from an engine result (docs/design.md "Results"), its flags included.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { PageResult } from '../../src/engine/ocr-engine.js';
import type { PageJobData, StageTimings } from '../../src/jobs/job-types.js';
import { pageResultJson } from '../../src/worker/page-result-json.js';

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
/** A US Letter page (612 × 792 pt) rendered at 144 dpi. */
const IMAGE = { width: 1224, height: 1584, pagePoints: { width: 612, height: 792 } };

const RESULT: PageResult = {
  markdown: '# Title\n\nBody',
  blocks: [
    { type: 'title', text: 'Title', box: [10, 20, 300, 40], boxes: [[10, 20, 300, 40], [10, 50, 300, 70]], span: { start: 0, end: 60 }, confidence: { mean: 0.75, min: 0.5 } },
    { type: 'text', text: 'Body', boxes: [], span: { start: 60, end: 90 }, confidence: { mean: 1, min: 1 } },
  ],
  paragraphs: [
    { text: '# Title', span: { start: 38, end: 60 }, confidence: { mean: 0.5, min: 0.25 } },
    { text: 'Body', span: { start: 80, end: 90 }, confidence: { mean: 1, min: 1 } },
  ],
  span: { start: 0, end: 110 },
  confidence: { mean: 0.8, min: 0.25 },
  rawText: '<|ref|>title<|/ref|>…',
  tokens: { prompt: 900, generated: 12, image: 890 },
  finish: 'eos',
  timings: { preprocess: 4, encode: 5, prefill: 6, decode: 7, postprocess: 8 },
};

test('blocks keep type, text, the first box and their confidence; a block without a box has no box field', () => {
  assert.deepEqual(pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE).blocks, [
    { type: 'title', text: 'Title', box: [10, 20, 300, 40], confidence: { mean: 0.75, min: 0.5 } },
    { type: 'text', text: 'Body', confidence: { mean: 1, min: 1 } },
  ]);
});

test('the page and each markdown paragraph carry their confidence; spans stay out of the result', () => {
  const json = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE);
  assert.deepEqual(json.confidence, { mean: 0.8, min: 0.25 });
  assert.deepEqual(json.paragraphs, [
    { text: '# Title', confidence: { mean: 0.5, min: 0.25 } },
    { text: 'Body', confidence: { mean: 1, min: 1 } },
  ]);
  assert.equal('span' in json, false);
});

test('the result names the source page, the model, the tokens, the timings and the worker', () => {
  const json = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 2, IMAGE);
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
  assert.equal('rawText' in pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE), false);
});

test('a PDF page records its pixel size, its dpi and its size in points, which map boxes to PDF coordinates', () => {
  const { render } = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE);
  assert.deepEqual(render, { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } });
  const [x0] = RESULT.blocks[0].box as number[];
  assert.equal((x0 * render.pdfPage!.width) / render.width, 5, 'pixel 10 at 144 dpi is 5 pt');
});

test('a page rendered to a longest side records that instead of a dpi; an image page records its pixel size only', () => {
  const longest = { ...DATA, options: { variant: 'v2' as const, task: 'markdown' as const, mode: 'gundam' as const, longestSide: 1000 } };
  assert.deepEqual(pageResultJson(longest, 4, RESULT, TIMINGS, READER, 1, IMAGE).render, {
    width: 1224,
    height: 1584,
    longestSide: 1000,
    pdfPage: { width: 612, height: 792 },
  });
  const png = { ...DATA, type: 'png' as const };
  assert.deepEqual(pageResultJson(png, 1, RESULT, TIMINGS, READER, 1, { width: 640, height: 480 }).render, { width: 640, height: 480 });
});

test('every page result names the Scriptorium version and commit that wrote it', () => {
  const { scriptorium } = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE);
  assert.match(scriptorium.version, /^\d+\.\d+\.\d+/);
  assert.match(scriptorium.commit, /^([0-9a-f]{40}|unknown)$/);
});

test('a result without a checkpoint identity or host is refused, not written with empty provenance', () => {
  assert.throws(() => pageResultJson(DATA, 4, RESULT, TIMINGS, { ...READER, checkpoint: '' }, 1, IMAGE), /model\.checkpoint: /);
  assert.throws(() => pageResultJson(DATA, 4, RESULT, TIMINGS, { ...READER, host: '' }, 1, IMAGE), /worker\.host: /);
});

test('a page that ended on its own with text carries no flags and needs no review', () => {
  const json = pageResultJson(DATA, 4, RESULT, TIMINGS, READER, 1, IMAGE);
  assert.deepEqual({ flags: json.flags, needs_review: json.needs_review, repetition: json.repetition }, { flags: [], needs_review: false, repetition: undefined });
});

test('the budget, the deadline and a loop flag a page for review, with the loop found; an empty page is flagged but needs no review', () => {
  const flagsOf = (result: Partial<PageResult>) => {
    const json = pageResultJson(DATA, 4, { ...RESULT, ...result }, TIMINGS, READER, 1, IMAGE);
    return { flags: json.flags, needs_review: json.needs_review, repetition: json.repetition };
  };
  const repetition = { start: 40, span: 12, repeats: 300 };
  assert.deepEqual(flagsOf({ finish: 'max_tokens', repetition }), { flags: ['max_tokens', 'repetition'], needs_review: true, repetition });
  assert.deepEqual(flagsOf({ finish: 'timeout' }), { flags: ['timeout'], needs_review: true, repetition: undefined });
  assert.deepEqual(flagsOf({ markdown: ' \n\t\n', blocks: [] }), { flags: ['empty'], needs_review: false, repetition: undefined });
  assert.deepEqual(flagsOf({ finish: 'timeout', markdown: '' }), { flags: ['timeout', 'empty'], needs_review: true, repetition: undefined });
});
