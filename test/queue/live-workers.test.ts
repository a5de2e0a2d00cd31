// Live-worker heartbeats, the per-minute throughput counters and the status read from them, against a real Redis.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

import type { PageJobData } from '../../src/jobs/job-types.js';
import { documentKeys } from '../../src/jobs/storage-layout.js';
import { pageJobId } from '../../src/queue/job-ids.js';

import { LIVE_WORKER_KEY_PREFIX, LiveWorkerHeartbeat, listLiveWorkers, type LiveWorkerIdentity, type LiveWorkerProgress } from '../../src/queue/live-workers.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { readQueueStatus } from '../../src/queue/queue-status.js';
import { countCompleted, countedKinds, countFlagged, recentFlagged, recentThroughput } from '../../src/queue/throughput.js';

const PAGES = pageQueue('v1');
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const IDENTITY: LiveWorkerIdentity = {
  host: 'ocr-7',
  pid: 4242,
  backend: 'cpu-avx2',
  threads: 8,
  variant: 'v3',
  checkpoint: 'sha256:abc',
  startedAt: 1_700_000_000_000,
};

const MINUTE = 60_000;
/** 12:34:30 on some day: half-way through a minute. */
const NOW = Date.UTC(2030, 0, 1, 12, 34, 30);

describe('live workers and throughput in Redis', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let client: Redis;

  before(() => {
    client = new Redis(redis.url);
  });
  after(() => client.disconnect());
  beforeEach(() => redis.flush());

  test('a started heartbeat lists the worker with its identity and progress', async () => {
    const progress: LiveWorkerProgress = { currentJobs: ['d1.p3-3'], pagesDone: 12, pagesFailed: 1 };
    const heartbeat = await LiveWorkerHeartbeat.start(client, IDENTITY, () => progress);
    try {
      const [worker, ...others] = await listLiveWorkers(client);
      assert.deepEqual(others, []);
      assert.ok(Math.abs(worker.lastHeartbeat - Date.now()) < 5_000);
      assert.deepEqual({ ...worker, lastHeartbeat: 0 }, { ...IDENTITY, ...progress, lastHeartbeat: 0 });
    } finally {
      await heartbeat.stop();
    }
  });

  test('each heartbeat writes the current progress', async () => {
    let progress: LiveWorkerProgress = { currentJobs: [], pagesDone: 0, pagesFailed: 0 };
    const heartbeat = await LiveWorkerHeartbeat.start(client, IDENTITY, () => progress, { intervalMs: 50 });
    try {
      progress = { currentJobs: ['d2.p1-1', 'd2.p2-2'], pagesDone: 5, pagesFailed: 0 };
      await waitFor(async () => (await listLiveWorkers(client))[0]?.pagesDone === 5);
      assert.deepEqual((await listLiveWorkers(client))[0].currentJobs, ['d2.p1-1', 'd2.p2-2']);
    } finally {
      await heartbeat.stop();
    }
  });

  test('stop removes the worker at once', async () => {
    const heartbeat = await LiveWorkerHeartbeat.start(client, IDENTITY, () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 }));
    await heartbeat.stop();
    assert.deepEqual(await listLiveWorkers(client), []);
  });

  test('a worker that stops beating drops out three heartbeat intervals later', async () => {
    const dying = new Redis(redis.url);
    dying.on('error', () => undefined);
    const heartbeat = await LiveWorkerHeartbeat.start(dying, IDENTITY, () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 }), { intervalMs: 200 });
    const ttl = await client.pttl(heartbeat.key);
    assert.ok(ttl > 400 && ttl <= 600, `TTL ${ttl} ms`);
    dying.disconnect(); // as if the process had died: no more beats, no removal
    await waitFor(async () => (await listLiveWorkers(client)).length === 0, 3_000);
    assert.equal(await client.exists(heartbeat.key), 0);
  });

  test('workers are listed by host, then pid, and a hash of another shape is left out', async () => {
    const progress = () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 });
    const beats = await Promise.all([
      LiveWorkerHeartbeat.start(client, { ...IDENTITY, host: 'b', pid: 2 }, progress),
      LiveWorkerHeartbeat.start(client, { ...IDENTITY, host: 'a', pid: 9 }, progress),
      LiveWorkerHeartbeat.start(client, { ...IDENTITY, host: 'b', pid: 1 }, progress),
    ]);
    await client.hset(`${LIVE_WORKER_KEY_PREFIX}stray`, { unrelated: '1' });
    try {
      assert.deepEqual((await listLiveWorkers(client)).map(({ host, pid }) => `${host}:${pid}`), ['a:9', 'b:1', 'b:2']);
    } finally {
      await Promise.all(beats.map((beat) => beat.stop()));
    }
  });

  test('throughput counts what was completed in the window, per queue', async () => {
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 7, NOW - 11 * MINUTE); // before a 10-minute window
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 30, NOW - 9 * MINUTE);
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 10, NOW - 2 * MINUTE);
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 5, NOW);
    await countCompleted(client, { queue: DOCUMENTS }, 2, NOW);
    const pages = await recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 10, NOW);
    // The first busy minute of the window began 9.5 minutes before NOW.
    assert.deepEqual(pages, { completed: 45, perMinute: 45 / 9.5 });
    assert.deepEqual(await recentThroughput(client, { queue: DOCUMENTS }, 10, NOW), { completed: 2, perMinute: 2 });
  });

  test('flagged pages are counted per flag in the window, a page with two flags under both', async () => {
    await countFlagged(client, ['timeout'], NOW - 11 * MINUTE); // before a 10-minute window
    await countFlagged(client, ['max_tokens', 'repetition'], NOW - 3 * MINUTE);
    await countFlagged(client, ['max_tokens'], NOW);
    await countFlagged(client, ['empty'], NOW);
    assert.deepEqual(await recentFlagged(client, 10, NOW), { max_tokens: 2, timeout: 0, repetition: 1, empty: 1 });
    assert.deepEqual(await recentFlagged(client, 12, NOW), { max_tokens: 2, timeout: 1, repetition: 1, empty: 1 });
    const [key] = await client.keys('{scriptorium}:throughput:flagged:empty:*');
    assert.ok((await client.ttl(key)) > 60 * 60, 'flagged counters are kept as long as the longest window');
  });

  test('a run that started in the current minute is rated over one minute at least', async () => {
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 6, NOW);
    assert.deepEqual(await recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 10, NOW), { completed: 6, perMinute: 6 });
  });

  test('nothing completed rates zero', async () => {
    assert.deepEqual(await recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 10, NOW), { completed: 0, perMinute: 0 });
  });

  test('counters expire after the longest window', async () => {
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 1, NOW);
    const [key] = await client.keys('{scriptorium}:throughput:pages-v1:*');
    const ttl = await client.ttl(key);
    assert.ok(ttl > 60 * 60 && ttl <= 61 * 60, `TTL ${ttl} s`);
  });

  test('kinds of page are counted apart, and the kinds counted lately are listed', async () => {
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-tiny' }, 40, NOW);
    await countCompleted(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 2, NOW);
    assert.deepEqual(await recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-tiny' }, 10, NOW), { completed: 40, perMinute: 40 });
    assert.deepEqual(await recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 10, NOW), { completed: 2, perMinute: 2 });
    assert.deepEqual(await countedKinds(client, PAGES), ['v1-markdown-gundam', 'v1-markdown-tiny']);
  });

  test('the status counts the pages left per kind of page, a page group as its pages', async () => {
    const v3Pages = pageQueue('v3');
    const pages = new Queue(v3Pages.name, { connection: { host: new URL(redis.url).hostname, port: Number(new URL(redis.url).port) }, prefix: v3Pages.prefix });
    try {
      const job = (docId: string, firstPage: number, lastPage: number, mode: 'tiny' | 'gundam', task: 'parse' | 'parse-multi'): PageJobData => ({
        docId,
        sourceUri: `/in/${docId}.pdf`,
        storage: 'file:///srv/scriptorium',
        type: 'pdf',
        firstPage,
        lastPage,
        keys: documentKeys(docId, 'pdf'),
        options: { variant: 'v3', task, mode },
        enqueuedAt: NOW,
      });
      const a = 'a'.repeat(32);
      const b = 'b'.repeat(32);
      await pages.add('page', job(a, 1, 1, 'tiny', 'parse'), { jobId: pageJobId(a, 1, 1) });
      await pages.add('page', job(a, 2, 2, 'tiny', 'parse'), { jobId: pageJobId(a, 2, 2) });
      await pages.add('pages', job(b, 1, 3, 'gundam', 'parse-multi'), { jobId: pageJobId(b, 1, 3) });
      await countCompleted(client, { queue: v3Pages, kind: 'v3-parse-tiny' }, 4, Date.now());
      const status = await readQueueStatus(redis.url, { windowMinutes: 10, failedShown: 0 });
      assert.deepEqual(
        status.pages.map(({ kind, completed, left }) => ({ kind, completed, left })),
        [
          { kind: 'v3-parse-multi-gundam', completed: 0, left: 3 },
          { kind: 'v3-parse-tiny', completed: 4, left: 2 },
        ],
      );
      assert.deepEqual(status.liveWorkers, []);
      assert.equal(status.queues.find(({ queue }) => queue.name === v3Pages.name)?.counts.waiting, 3);
    } finally {
      await pages.close();
    }
  });

  test('a window outside 1 to 60 minutes is refused', async () => {
    await assert.rejects(recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 0, NOW), /1 to 60 minutes, got 0/);
    await assert.rejects(recentThroughput(client, { queue: PAGES, kind: 'v1-markdown-gundam' }, 61, NOW), /1 to 60 minutes, got 61/);
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
