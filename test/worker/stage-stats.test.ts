// Stage statistics of document.json: nearest-rank percentiles (always one of the values).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { nearestRankPercentile, summarizeStageTimes } from '../../src/worker/stage-stats.js';

const ONE_TO_TEN = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

test('p50 of 1…10 is 5, the smallest value with half the values at or below it', () => {
  assert.equal(nearestRankPercentile(ONE_TO_TEN, 50), 5);
});

test('p90 of 1…10 is 9 and p99 is 10', () => {
  assert.equal(nearestRankPercentile(ONE_TO_TEN, 90), 9);
  assert.equal(nearestRankPercentile(ONE_TO_TEN, 99), 10);
});

test('percentiles of 1…100 are the values of that rank', () => {
  const values = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.deepEqual([7, 29, 50, 90, 99, 100].map((p) => nearestRankPercentile(values, p)), [7, 29, 50, 90, 99, 100]);
});

test('a single value is every percentile', () => {
  assert.deepEqual([50, 90, 99].map((p) => nearestRankPercentile([42], p)), [42, 42, 42]);
});

test('percentiles outside (0, 100] are rejected', () => {
  assert.throws(() => nearestRankPercentile(ONE_TO_TEN, 0), RangeError);
  assert.throws(() => nearestRankPercentile(ONE_TO_TEN, 101), RangeError);
});

test('a summary sorts its values and gives total, p50, p90, p99 and max', () => {
  assert.deepEqual(summarizeStageTimes([30, 10, 20, 40]), { total: 100, p50: 20, p90: 40, p99: 40, max: 40 });
});

test('the summary total is rounded to 0.1 ms', () => {
  assert.equal(summarizeStageTimes([0.1, 0.2]).total, 0.3);
});

test('the summary of no values is all zeros', () => {
  assert.deepEqual(summarizeStageTimes([]), { total: 0, p50: 0, p90: 0, p99: 0, max: 0 });
});
