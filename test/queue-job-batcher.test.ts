// JobBatcher: jobs claimed together run together, one batch at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JobBatcher } from '../src/queue/job-batcher.js';

/** A runner that records its batches and answers each item with its double once `release` is called. */
function gatedRunner() {
  const batches: number[][] = [];
  const gates: Array<() => void> = [];
  const run = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    return items.map((item) => item * 2);
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    gates.shift()!();
  };
  return { batches, run, release };
}

test('items submitted together run as one batch and each gets its own result', async () => {
  const runner = gatedRunner();
  const batcher = new JobBatcher(runner.run, { maxBatch: 4, windowMs: 20 });
  const results = Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
  await runner.release();
  assert.deepEqual(await results, [2, 4, 6]);
  assert.deepEqual(runner.batches, [[1, 2, 3]]);
});

test('a full batch starts without waiting for the window', async () => {
  const batcher = new JobBatcher(async (items: number[]) => items, { maxBatch: 2, windowMs: 60_000 });
  assert.deepEqual(await Promise.all([batcher.submit(1), batcher.submit(2)]), [1, 2]);
});

test('a lone item runs once the window has passed', async () => {
  const batcher = new JobBatcher(async (items: number[]) => items, { maxBatch: 4, windowMs: 10 });
  const started = performance.now();
  assert.equal(await batcher.submit(7), 7);
  assert.ok(performance.now() - started >= 9, 'ran before the window was over');
});

test('items that arrive while a batch runs form the next batch, up to maxBatch, after it', async () => {
  const runner = gatedRunner();
  const batcher = new JobBatcher(runner.run, { maxBatch: 2, windowMs: 0 });
  const all = [batcher.submit(1)];
  await new Promise((resolve) => setTimeout(resolve, 5));
  all.push(batcher.submit(2), batcher.submit(3), batcher.submit(4));
  assert.deepEqual(runner.batches, [[1]], 'a second batch started while the first ran');
  await runner.release();
  await runner.release();
  await runner.release();
  assert.deepEqual(await Promise.all(all), [2, 4, 6, 8]);
  assert.deepEqual(runner.batches, [[1], [2, 3], [4]]);
});

test('when a run rejects, every item of that batch rejects and later batches still run', async () => {
  let calls = 0;
  const batcher = new JobBatcher(
    async (items: number[]) => {
      if (calls++ === 0) throw new Error('engine failed');
      return items;
    },
    { maxBatch: 2, windowMs: 10 },
  );
  const failed = [batcher.submit(1), batcher.submit(2)];
  await assert.rejects(failed[0], /engine failed/);
  await assert.rejects(failed[1], /engine failed/);
  assert.equal(await batcher.submit(3), 3);
});

test('a runner that returns the wrong number of results rejects the batch', async () => {
  const batcher = new JobBatcher(async () => [], { maxBatch: 1, windowMs: 0 });
  await assert.rejects(batcher.submit(1), /a batch of 1 items returned 0 results/);
});

test('maxBatch must be a positive integer', () => {
  assert.throws(() => new JobBatcher(async () => [], { maxBatch: 0 }), /maxBatch must be an integer >= 1, got 0/);
});

test('an item submitted alone runs in a batch of its own, in its place in the order', async () => {
  const runner = gatedRunner();
  const batcher = new JobBatcher(runner.run, { maxBatch: 4, windowMs: 20 });
  const results = Promise.all([batcher.submit(1), batcher.submit(2), batcher.submit(3, { alone: true }), batcher.submit(4), batcher.submit(5)]);
  for (let i = 0; i < 3; i++) await runner.release();
  assert.deepEqual(await results, [2, 4, 6, 8, 10]);
  assert.deepEqual(runner.batches, [[1, 2], [3], [4, 5]]);
});

test('an item submitted alone does not wait for the window', async () => {
  const batcher = new JobBatcher(async (items: number[]) => items, { maxBatch: 4, windowMs: 60_000 });
  assert.equal(await batcher.submit(7, { alone: true }), 7);
});
