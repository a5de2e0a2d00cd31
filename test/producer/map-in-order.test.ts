// mapInOrder: results in the items' order whatever order the steps finish in, never more than the
// limit running, a rejection thrown in its turn with nothing started after it, and the steps
// already started waited for whenever the loop ends early.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { mapInOrder } from '../../src/producer/map-in-order.js';

/** Steps that finish when the test says so, recording how many run at once. */
function controlledSteps() {
  const finishers = new Map<number, { resolve: (value: string) => void; reject: (error: Error) => void }>();
  const started: number[] = [];
  const state = { running: 0, mostRunning: 0 };
  const step = (item: number) =>
    new Promise<string>((resolve, reject) => {
      started.push(item);
      state.running++;
      state.mostRunning = Math.max(state.mostRunning, state.running);
      const settle = () => state.running--;
      finishers.set(item, { resolve: (value) => (settle(), resolve(value)), reject: (error) => (settle(), reject(error)) });
    });
  return { step, started, state, finish: (item: number) => finishers.get(item)!.resolve(`result ${item}`), fail: (item: number, error: Error) => finishers.get(item)!.reject(error) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function* countUpTo(n: number): AsyncGenerator<number> {
  for (let item = 0; item < n; item++) yield item;
}

describe('mapInOrder', () => {
  test('results come in the items\' order, with at most the limit running', async () => {
    const steps = controlledSteps();
    const results: string[] = [];
    const loop = (async () => {
      for await (const result of mapInOrder(countUpTo(7), 3, steps.step)) results.push(result);
    })();
    await tick();
    assert.deepEqual(steps.started, [0, 1, 2]);
    // Later items finish first: nothing is yielded until item 0 is done, and nothing more is started.
    steps.finish(2);
    steps.finish(1);
    await tick();
    assert.deepEqual(results, []);
    assert.deepEqual(steps.started, [0, 1, 2]);
    steps.finish(0);
    await tick();
    assert.deepEqual(results, ['result 0', 'result 1', 'result 2']);
    assert.deepEqual(steps.started, [0, 1, 2, 3, 4, 5]);
    steps.finish(5);
    steps.finish(4);
    steps.finish(3);
    await tick();
    assert.deepEqual(steps.started, [0, 1, 2, 3, 4, 5, 6]);
    steps.finish(6);
    await loop;
    assert.deepEqual(results, [0, 1, 2, 3, 4, 5, 6].map((item) => `result ${item}`));
    assert.equal(steps.state.mostRunning, 3);
  });

  test('takes plain arrays too, and an empty one yields nothing', async () => {
    const doubled: number[] = [];
    for await (const value of mapInOrder([1, 2, 3], 2, async (item, index) => item * 10 + index)) doubled.push(value);
    assert.deepEqual(doubled, [10, 21, 32]);
    for await (const value of mapInOrder([], 4, async () => 1)) assert.fail(`nothing to yield, got ${value}`);
  });

  test('a rejection is thrown in its turn, nothing is started after it, and the started steps are waited for', async () => {
    const steps = controlledSteps();
    const results: string[] = [];
    let thrown: Error | undefined;
    let loopEnded = false;
    const loop = (async () => {
      try {
        for await (const result of mapInOrder(countUpTo(10), 3, steps.step)) results.push(result);
      } catch (error) {
        thrown = error as Error;
      }
      loopEnded = true;
    })();
    await tick();
    steps.fail(1, new Error('step 1 failed'));
    steps.finish(0);
    await tick();
    await tick();
    assert.deepEqual(results, ['result 0']);
    // Item 0's turn let item 3 start; item 1's rejection then ends the loop, but only once 2 and 3 are done.
    assert.deepEqual(steps.started, [0, 1, 2, 3]);
    assert.equal(loopEnded, false);
    steps.finish(2);
    await tick();
    assert.equal(loopEnded, false);
    steps.finish(3);
    await loop;
    assert.equal(thrown?.message, 'step 1 failed');
    assert.deepEqual(steps.started, [0, 1, 2, 3]);
    assert.equal(steps.state.running, 0);
  });

  test('a consumer that stops early waits for the steps already started', async () => {
    const steps = controlledSteps();
    let loopEnded = false;
    const loop = (async () => {
      for await (const result of mapInOrder(countUpTo(10), 4, steps.step)) if (result === 'result 0') break;
      loopEnded = true;
    })();
    await tick();
    steps.finish(0);
    await tick();
    await tick();
    assert.equal(loopEnded, false);
    for (const item of steps.started.slice(1)) steps.finish(item);
    await loop;
    assert.equal(steps.state.running, 0);
  });

  test('a limit below 1 is refused', async () => {
    await assert.rejects(mapInOrder([1], 0, async (item) => item).next(), /limit must be a whole number of at least 1/);
  });
});
