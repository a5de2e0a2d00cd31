// SharedOrAlone: shared tasks run side by side; an alone task waits for the running ones and runs by itself.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { SharedOrAlone } from '../../src/worker/shared-or-alone.js';

/** A task that records its start and end in `log` and finishes when its `finish` is called. */
function gate(log: string[], name: string) {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    task: async () => {
      log.push(`${name} start`);
      await done;
      log.push(`${name} end`);
      return name;
    },
    finish: () => finish(),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('SharedOrAlone', () => {
  test('shared tasks start together', async () => {
    const lanes = new SharedOrAlone();
    const log: string[] = [];
    const [a, b] = [gate(log, 'a'), gate(log, 'b')];
    const runs = [lanes.run(false, a.task), lanes.run(false, b.task)];
    await tick();
    assert.deepEqual(log, ['a start', 'b start']);
    a.finish();
    b.finish();
    assert.deepEqual(await Promise.all(runs), ['a', 'b']);
  });

  test('an alone task waits for the running tasks, and later shared tasks wait for it', async () => {
    const lanes = new SharedOrAlone();
    const log: string[] = [];
    const [a, alone, c] = [gate(log, 'a'), gate(log, 'alone'), gate(log, 'c')];
    const runs = [lanes.run(false, a.task), lanes.run(true, alone.task), lanes.run(false, c.task)];
    await tick();
    assert.deepEqual(log, ['a start']);
    a.finish();
    await tick();
    await tick();
    assert.deepEqual(log, ['a start', 'a end', 'alone start']);
    alone.finish();
    await tick();
    await tick();
    assert.deepEqual(log, ['a start', 'a end', 'alone start', 'alone end', 'c start']);
    c.finish();
    await Promise.all(runs);
  });

  test('a failing task rejects its own run and frees its lane', async () => {
    const lanes = new SharedOrAlone();
    await assert.rejects(lanes.run(true, () => Promise.reject(new Error('engine crashed'))), /engine crashed/);
    assert.equal(await lanes.run(false, async () => 'next'), 'next');
  });
});
