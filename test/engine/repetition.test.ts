// The loop detector on token ids: loops of several span lengths are found with their start, span and
// repeats; near-loops, legitimate repeats (identical table rows a few times, short runs) and short
// pages are not loops; the thresholds and the window hold at their edges.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_REPETITION_THRESHOLDS, findRepetition } from '../../src/engine/repetition.js';

/** `count` ids that never repeat, starting at `first`. */
function distinct(count: number, first: number): number[] {
  return Array.from({ length: count }, (_, i) => first + i);
}

/** `span` repeated `times` times. */
function repeated(span: readonly number[], times: number): number[] {
  return Array.from({ length: times }, () => span).flat();
}

test('the default thresholds: a span of 20 tokens or more, 10 times, in the last 16,384 tokens', () => {
  assert.deepEqual(DEFAULT_REPETITION_THRESHOLDS, { minSpanTokens: 20, minRepeats: 10, windowTokens: 16_384 });
});

test('loops of spans of 1, 2, 7 and 50 tokens are found with their start, span and repeats', () => {
  for (const [span, times] of [
    [1, 300],
    [2, 150],
    [7, 40],
    [50, 12],
  ]) {
    const text = distinct(100, 1000);
    const ids = [...text, ...repeated(distinct(span, 5000), times)];
    assert.deepEqual(findRepetition(ids), { start: 100, span, repeats: times }, `a span of ${span}`);
  }
});

test('a loop reaching the end of the ids after normal text counts its last, cut copy out of the repeats', () => {
  const loop = distinct(30, 5000);
  const ids = [...distinct(2000, 1000), ...repeated(loop, 25), ...loop.slice(0, 17)];
  assert.deepEqual(findRepetition(ids), { start: 2000, span: 30, repeats: 25 });
});

test('a loop the model left is found too, followed by other text', () => {
  const ids = [...distinct(300, 1000), ...repeated(distinct(60, 5000), 15), ...distinct(400, 9000)];
  assert.deepEqual(findRepetition(ids), { start: 300, span: 60, repeats: 15 });
});

test('near-loops, one token different in every copy (numbered rows), are no loop', () => {
  for (const span of [2, 7, 50]) {
    const copies = Array.from({ length: Math.ceil(400 / span) + 20 }, (_, copy) => [...distinct(span - 1, 5000), 20_000 + copy]);
    assert.equal(findRepetition(copies.flat()), undefined, `a span of ${span}`);
  }
});

test('legitimate repeats are no loop: identical table rows three times, nine times, a short run of one token', () => {
  const row = distinct(14, 5000); // <tr><td>…</td>…</tr>
  assert.equal(findRepetition([...distinct(200, 1000), ...repeated(row, 3), ...distinct(200, 8000)]), undefined);
  const longRow = distinct(50, 5000);
  assert.equal(findRepetition([...distinct(50, 1000), ...repeated(longRow, 9)]), undefined);
  assert.equal(findRepetition([...distinct(50, 1000), ...repeated(longRow, 10)])?.repeats, 10, 'ten copies are a loop');
  // A dot leader or a separator line: one token 199 times is under the 20 × 10 tokens a loop covers.
  assert.equal(findRepetition([...distinct(50, 1000), ...repeated([7], 199), ...distinct(50, 3000)]), undefined);
  assert.equal(findRepetition([...distinct(50, 1000), ...repeated([7], 200), ...distinct(50, 3000)])?.span, 1);
});

test('short pages and empty ones have no loop', () => {
  assert.equal(findRepetition([]), undefined);
  assert.equal(findRepetition([5]), undefined);
  assert.equal(findRepetition(repeated([5], 40)), undefined);
  assert.equal(findRepetition(distinct(10, 1)), undefined);
});

test('only the last windowTokens tokens are searched', () => {
  const thresholds = { minSpanTokens: 4, minRepeats: 5, windowTokens: 100 };
  const loop = repeated(distinct(4, 5000), 6);
  assert.deepEqual(findRepetition([...loop, ...distinct(70, 1000)], thresholds), { start: 0, span: 4, repeats: 6 });
  assert.equal(findRepetition([...loop, ...distinct(90, 1000)], thresholds), undefined, 'the loop starts before the window');
  // Inside the window, the start is still an index into all the ids.
  assert.deepEqual(findRepetition([...distinct(500, 9000), ...loop], thresholds), { start: 500, span: 4, repeats: 6 });
});
