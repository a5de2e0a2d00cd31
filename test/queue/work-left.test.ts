// The one ETA rule of `scriptorium status` and the API's document status: per kind, work left over its
// recent rate; the slowest kind decides; nothing without a live worker or while a kind with work left
// has no recent rate. And which job states count as unfinished.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { timeLeft, UNFINISHED_DOCUMENT_STATES, UNFINISHED_PAGE_STATES } from '../../src/queue/work-left.js';

test('one kind: what is left over the rate per minute', () => {
  assert.deepEqual(timeLeft([{ left: 30, perMinute: 4 }], true), { state: 'minutes', minutes: 7.5 });
  assert.deepEqual(timeLeft([{ left: 1, perMinute: 60 }], true), { state: 'minutes', minutes: 1 / 60 });
});

test('kinds are worked side by side: the slowest kind gives the ETA, not the sum', () => {
  const fastTiny = { left: 100, perMinute: 50 }; // 2 min
  const slowGundam = { left: 12, perMinute: 2 }; // 6 min
  assert.deepEqual(timeLeft([fastTiny, slowGundam], true), { state: 'minutes', minutes: 6 });
});

test('a kind with nothing left does not count, even without a rate', () => {
  assert.deepEqual(timeLeft([{ left: 10, perMinute: 5 }, { left: 0, perMinute: 0 }], true), { state: 'minutes', minutes: 2 });
});

test('nothing left: no ETA is needed, with or without workers', () => {
  assert.deepEqual(timeLeft([], true), { state: 'nothing-left' });
  assert.deepEqual(timeLeft([{ left: 0, perMinute: 3 }], false), { state: 'nothing-left' });
});

test('no ETA without a live worker: the recent rate is then a rate of the past', () => {
  assert.deepEqual(timeLeft([{ left: 10, perMinute: 5 }], false), { state: 'no-live-workers' });
});

test('no ETA while a kind with work left completed nothing lately, whatever the other kinds do', () => {
  assert.deepEqual(timeLeft([{ left: 10, perMinute: 5 }, { left: 1, perMinute: 0 }], true), { state: 'no-rate' });
});

test('unfinished jobs: pages waiting, held or delayed for a retry; documents also waiting for their pages', () => {
  assert.deepEqual([...UNFINISHED_PAGE_STATES], ['waiting', 'prioritized', 'active', 'delayed', 'paused']);
  assert.deepEqual([...UNFINISHED_DOCUMENT_STATES], ['waiting', 'prioritized', 'active', 'delayed', 'paused', 'waiting-children']);
});
