// The number an autoscaler scales workers on: the dashboard's GET /queue-depth counts every page job
// no worker has claimed (plain waiting, prioritized, delayed for a retry, paused) per variant, and
// the ones being read, from zero while the queue is empty to N while it holds work and back to zero
// once the queue drains.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue, Worker } from 'bullmq';
import { pino } from 'pino';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import type { PageQueueDepth } from '../../src/queue/queue-depth.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { startDashboard, type Dashboard } from '../../src/server/dashboard-server.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const logger = pino({ level: 'silent' });

describe('GET /queue-depth', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let dashboard: Dashboard;
  const queues = new Map<Variant, Queue>();

  const depth = async (): Promise<Record<Variant, PageQueueDepth>> => {
    const response = await fetch(new URL('queue-depth', dashboard.url));
    assert.equal(response.status, 200);
    return (await response.json()) as Record<Variant, PageQueueDepth>;
  };

  before(async () => {
    for (const variant of ['v1', 'v3'] as const) {
      queues.set(variant, new Queue(pageQueue(variant).name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue(variant).prefix }));
    }
    dashboard = await startDashboard({ redisUrl: redis.url, host: '127.0.0.1', port: 0, logger });
  });
  beforeEach(() => redis.flush());
  after(async () => {
    await dashboard?.close();
    await Promise.all([...queues.values()].map((queue) => queue.close()));
  });

  test('an empty queue is zero for every variant', async () => {
    const empty = { waiting: 0, prioritized: 0, delayed: 0, paused: 0, active: 0, unclaimed: 0, pending: 0 };
    assert.deepEqual(await depth(), {
      v1: { queue: '{scriptorium}:pages-v1', ...empty },
      v2: { queue: '{scriptorium}:pages-v2', ...empty },
      v3: { queue: '{scriptorium}:pages-v3', ...empty },
    });
  });

  test('every unclaimed state counts, prioritized and delayed included, per variant; active ones only in pending', async () => {
    const v3 = queues.get('v3')!;
    await v3.add('plain', {});
    await v3.add('plain', {});
    await v3.add('prioritized', {}, { priority: 1000 });
    await v3.add('prioritized', {}, { priority: 5 });
    await v3.add('retry in backoff', {}, { delay: 60_000 });
    await queues.get('v1')!.add('v1 page', {}, { priority: 1000 });
    // One job claimed by a worker, as `scriptorium work` holds it (jobs without a priority come first).
    const claimer = new Worker(pageQueue('v3').name, null, { connection: redisOptions(redis.url, 'worker'), prefix: pageQueue('v3').prefix });
    try {
      assert.equal((await claimer.getNextJob('test-token'))?.name, 'plain');
      const { v1, v2, v3: pages } = await depth();
      assert.deepEqual(
        { waiting: pages.waiting, prioritized: pages.prioritized, delayed: pages.delayed, active: pages.active, unclaimed: pages.unclaimed, pending: pages.pending },
        { waiting: 1, prioritized: 2, delayed: 1, active: 1, unclaimed: 4, pending: 5 },
      );
      assert.deepEqual([v1.unclaimed, v1.pending, v2.pending], [1, 1, 0]);
    } finally {
      await claimer.close(true);
    }
  });

  test('a paused queue still has work waiting', async () => {
    const v3 = queues.get('v3')!;
    await v3.pause();
    try {
      await v3.add('page', {});
      assert.deepEqual([(await depth()).v3.paused, (await depth()).v3.unclaimed], [1, 1]);
    } finally {
      await v3.resume();
    }
  });

  test('rises from zero with work and falls back to zero once workers have drained the queue', async () => {
    assert.equal((await depth()).v3.pending, 0);
    const v3 = queues.get('v3')!;
    await v3.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: `page ${i}`, data: {}, opts: { priority: 1000 } })));
    assert.equal((await depth()).v3.pending, 6);
    const worker = new Worker(pageQueue('v3').name, async () => 'read', {
      connection: redisOptions(redis.url, 'worker'),
      prefix: pageQueue('v3').prefix,
      concurrency: 2,
    });
    try {
      await new Promise<void>((resolve) => {
        let completed = 0;
        worker.on('completed', () => {
          if (++completed === 6) resolve();
        });
      });
    } finally {
      await worker.close();
    }
    assert.deepEqual((await depth()).v3, { queue: '{scriptorium}:pages-v3', waiting: 0, prioritized: 0, delayed: 0, paused: 0, active: 0, unclaimed: 0, pending: 0 });
  });
});
