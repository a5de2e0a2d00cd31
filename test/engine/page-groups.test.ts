import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { planPageGroups } from '../../src/engine/v3-page-groups.js';

describe('planPageGroups', () => {
  test('a document that fits goes out as one request', () => {
    assert.deepEqual(planPageGroups(40, { outputBudgetPerPage: 500, promptTokens: 4 }), [{ start: 0, end: 40 }]);
  });

  test('the largest group satisfies 1 + 273·n + prompt + n·budget ≤ 32768 and one more page would not', () => {
    // (32768 − 1 − 4) / (273 + 1000) = 25.7 → 25 pages per request.
    const groups = planPageGroups(60, { outputBudgetPerPage: 1000, promptTokens: 4 });
    assert.deepEqual(groups, [{ start: 0, end: 25 }, { start: 25, end: 50 }, { start: 50, end: 60 }]);
    assert.ok(1 + 273 * 25 + 4 + 25 * 1000 <= 32768);
    assert.ok(1 + 273 * 26 + 4 + 26 * 1000 > 32768);
  });

  test('a group filling the context exactly is allowed', () => {
    // 1 + 2·273 + 1 + 2·x = 1000 → x = 226.
    assert.deepEqual(planPageGroups(3, { contextLimit: 1000, outputBudgetPerPage: 226, promptTokens: 1 }), [{ start: 0, end: 2 }, { start: 2, end: 3 }]);
  });

  test('no pages, no requests', () => {
    assert.deepEqual(planPageGroups(0, { outputBudgetPerPage: 100, promptTokens: 4 }), []);
  });

  test('a single page that does not fit is an error that says what to change', () => {
    assert.throws(() => planPageGroups(1, { contextLimit: 1000, outputBudgetPerPage: 800, promptTokens: 4 }), /1078 tokens, over the context limit 1000: lower outputBudgetPerPage/);
  });

  test('negative or fractional counts are refused', () => {
    assert.throws(() => planPageGroups(-1, { outputBudgetPerPage: 100, promptTokens: 4 }), /pageCount/);
    assert.throws(() => planPageGroups(2, { outputBudgetPerPage: 1.5, promptTokens: 4 }), /outputBudgetPerPage/);
  });
});
