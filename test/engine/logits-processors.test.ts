import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { applyRepetitionPenalty, argmax, noRepeatNgramBans, topK } from '../../src/engine/logits-processors.js';
import { slidingNoRepeatNgramBans } from '../reference/reference-generate.js';

describe('sliding-window no-repeat-n-gram bans', () => {
  test('bans the token that completed an earlier occurrence of the last n-1 tokens', () => {
    assert.deepEqual([...noRepeatNgramBans([1, 2, 3, 1, 2], { size: 3, window: 100 })], [3]);
  });

  test('n-grams starting before the window do not count', () => {
    const tokens = [1, 2, 3, 9, 9, 9, 1, 2];
    assert.deepEqual([...noRepeatNgramBans(tokens, { size: 3, window: 100 })], [3]);
    assert.deepEqual([...noRepeatNgramBans(tokens, { size: 3, window: 7 })], []);
  });

  test('whitelisted ids are never banned', () => {
    assert.deepEqual([...noRepeatNgramBans([128821, 5, 128821], { size: 2, window: 10, whitelist: [5] })], []);
  });

  test('sequences shorter than n ban nothing', () => {
    assert.equal(noRepeatNgramBans([1, 1], { size: 3, window: 10 }).size, 0);
  });

  test('agrees with the reference rule on 2000 random sequences', () => {
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let trial = 0; trial < 2000; trial++) {
      const tokens = Array.from({ length: Math.floor(random() * 60) }, () => Math.floor(random() * 4));
      const size = 1 + Math.floor(random() * 5);
      const window = 1 + Math.floor(random() * 70);
      const whitelist = random() < 0.3 ? [0] : [];
      const ours = [...noRepeatNgramBans(tokens, { size, window, whitelist })].sort();
      const theirs = [...slidingNoRepeatNgramBans(tokens, size, window, new Set(whitelist))].sort();
      assert.deepEqual(ours, theirs, JSON.stringify({ tokens, size, window, whitelist }));
    }
  });
});

describe('token selection', () => {
  test('argmax takes the lowest index on ties', () => {
    assert.equal(argmax(Float32Array.of(1, 3, 3, -Infinity)), 1);
  });

  test('topK orders best first with lower ids first on ties', () => {
    const best = topK(Float32Array.of(0.5, 2, -1, 2, 7, -Infinity), 4);
    assert.deepEqual([...best.ids], [4, 1, 3, 0]);
    assert.deepEqual([...best.logits], [7, 2, 2, 0.5]);
  });

  test('topK fills with -Infinity entries when the vocabulary is mostly banned', () => {
    const best = topK(Float32Array.of(-Infinity, 1, -Infinity), 3);
    assert.deepEqual([...best.ids], [1, 0, 2]);
  });

  test('repetition penalty divides positive and multiplies negative logits once per id', () => {
    const logits = Float32Array.of(2, -2, 4);
    applyRepetitionPenalty(logits, [0, 1, 1], 2);
    assert.deepEqual([...logits], [1, -4, 4]);
  });
});
