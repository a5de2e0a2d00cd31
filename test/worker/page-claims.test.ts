// Page claims against a real Redis: a worker taking a page job over counts the earlier readers that
// died (their live-worker entry gone, or their process gone from this host) and not those still alive;
// and a retry's wait, measured by Redis's clock.
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';

import { LiveWorkerHeartbeat } from '../../src/queue/live-workers.js';
import { claimsKey, PageClaims } from '../../src/worker/page-claims.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const IDENTITY = { host: 'elsewhere', pid: 1, backend: 'cpu', threads: 1, variant: 'v1', checkpoint: 'sha256:x', startedAt: 0 };
const IDLE = () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 });

describe('page claims', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let client: Redis;

  before(() => {
    client = new Redis(redis.url);
  });
  after(() => client.disconnect());

  /** Claims made as if from another host (so only its live-worker entry tells whether it is alive). */
  async function claimFromElsewhere(jobId: string, workerKey: string): Promise<void> {
    await client.hset(claimsKey(jobId), `${workerKey} token-1`, JSON.stringify({ host: 'elsewhere', pid: 1 }));
  }

  test('a reader without a live-worker entry is a death', async () => {
    await claimFromElsewhere('dead', '{scriptorium}:workers:elsewhere:1:gone');
    const taker = new PageClaims({ redis: client, workerKey: 'taker' });
    await taker.claim('dead', 'token-2');
    assert.equal(await taker.deaths('dead'), 1);
    // Settled once: asking again counts it no more.
    assert.equal(await taker.deaths('dead'), 1);
  });

  test('a reader that keeps beating is alive: no death', async () => {
    const alive = await LiveWorkerHeartbeat.start(client, IDENTITY, IDLE, { intervalMs: 100 });
    try {
      await claimFromElsewhere('alive', alive.key);
      assert.equal(await new PageClaims({ redis: client, workerKey: 'taker' }).deaths('alive'), 0);
    } finally {
      await alive.stop();
    }
  });

  test('a reader whose attempt ends meanwhile is no death', async () => {
    const silent = await LiveWorkerHeartbeat.start(client, IDENTITY, IDLE, { intervalMs: 60_000 });
    try {
      await claimFromElsewhere('ending', silent.key);
      const counting = new PageClaims({ redis: client, workerKey: 'taker' }).deaths('ending');
      await new PageClaims({ redis: client, workerKey: silent.key }).release('ending', 'token-1');
      assert.equal(await counting, 0);
    } finally {
      await silent.stop();
    }
  });

  test('a reader on this host whose process is gone is a death at once, whatever its entry says', async () => {
    const entry = await LiveWorkerHeartbeat.start(client, IDENTITY, IDLE, { intervalMs: 60_000 });
    try {
      const gonePid = 2 ** 22 + 1; // above Linux's pid_max limit: no such process
      await client.hset(claimsKey('crashed'), `${entry.key} token-1`, JSON.stringify({ host: os.hostname(), pid: gonePid }));
      assert.equal(await new PageClaims({ redis: client, workerKey: 'taker' }).deaths('crashed'), 1);
    } finally {
      await entry.stop();
    }
  });
  test("a retry's wait is its backoff from the failed try by Redis's clock, whatever this host's clock says", async (t) => {
    const claims = new PageClaims({ redis: client, workerKey: 'reader' });
    assert.equal(await claims.retryWaitMs('never-failed', 2_000), 0);
    const started = performance.now();
    await claims.failed('retried');
    // Clocks a minute behind and ahead: BullMQ would release the retry at once, or a minute late.
    for (const skewMs of [-60_000, 60_000]) {
      t.mock.method(Date, 'now', () => performance.timeOrigin + performance.now() + skewMs);
      const waitMs = await claims.retryWaitMs('retried', 2_000);
      const elapsedMs = performance.now() - started;
      assert.ok(waitMs <= 2_000 && waitMs >= 2_000 - elapsedMs - 2, `${waitMs} ms left after ${elapsedMs.toFixed(1)} ms`);
      t.mock.restoreAll();
    }
    // A failure record is no claim: it counts as no reader, dead or alive.
    assert.equal(await claims.deaths('retried'), 0);
  });
});
