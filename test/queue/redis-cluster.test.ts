// Redis Cluster: redis-cluster:// URLs, and the pipeline on a private three-master cluster: every
// queue's keys hash to one slot (BullMQ's multi-key scripts would fail with CROSSSLOT otherwise), a
// multi-page document is enqueued and read by a worker, and the project's own keys (page claims, live
// workers, throughput counters behind `status`) work there.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { FlowProducer, Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments, type EnqueueSummary } from '../../src/producer/enqueue.js';
import { LiveWorkerHeartbeat, listLiveWorkers } from '../../src/queue/live-workers.js';
import { DOCUMENTS, PAGE_QUEUES } from '../../src/queue/queue-names.js';
import { QueueCapacity, redisMemory } from '../../src/queue/queue-capacity.js';
import { readQueueStatus } from '../../src/queue/queue-status.js';
import { checkRedisReachable, connectRedis, redactedRedisUrl, redisOptions, scanKeys, type RedisClient } from '../../src/queue/redis.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { startRedisListSource } from '../../src/watch/redis-list-source.js';
import { PageClaims } from '../../src/worker/page-claims.js';
import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_CLUSTER_MISSING, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;
const IDENTITY = { host: 'elsewhere', pid: 1, backend: 'cpu', threads: 1, variant: 'v1', checkpoint: 'sha256:x', startedAt: 0 };
const IDLE = () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 });

test('redis-cluster:// names the nodes a cluster is discovered from, with credentials and TLS', () => {
  assert.deepEqual(redisOptions('redis-cluster://user:p%40ss@10.0.0.1:7000,10.0.0.2:7001,[::1]', 'client'), {
    clusterNodes: [
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 6379 },
    ],
    username: 'user',
    password: 'p@ss',
  });
  assert.deepEqual(redisOptions('rediss-cluster://cache.example:6379', 'worker'), {
    clusterNodes: [{ host: 'cache.example', port: 6379 }],
    tls: {},
    maxRetriesPerRequest: null,
  });
});

test('a cluster URL with a database or a bad node is refused, and its password never shown', () => {
  assert.throws(() => redisOptions('redis-cluster://a:7000/2', 'client'), /a Redis Cluster has no databases but 0/);
  assert.throws(() => redisOptions('redis-cluster://a:7000,b:x', 'client'), /invalid node "b:x" in Redis Cluster URL/);
  assert.equal(redactedRedisUrl('redis-cluster://user:secret@a:7000,b:7001'), 'redis-cluster://user:***@a:7000,b:7001');
});

test('connectRedis opens a Cluster for cluster options and one Redis otherwise', () => {
  const cluster = connectRedis({ ...redisOptions('redis-cluster://127.0.0.1:1', 'client'), lazyConnect: true });
  const single = connectRedis({ ...redisOptions('redis://127.0.0.1:1', 'client'), lazyConnect: true });
  assert.ok(cluster instanceof Cluster);
  assert.ok(!(single instanceof Cluster));
  cluster.disconnect();
  single.disconnect();
});

describe('on a Redis Cluster', { skip: REDIS_CLUSTER_MISSING }, () => {
  let cluster: TestRedisCluster;
  let client: RedisClient;
  let work: string;
  let storage: Storage;

  before(async () => {
    cluster = await startRedisCluster();
    client = connectRedis(redisOptions(cluster.url, 'client'));
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-cluster-'));
    storage = openStorage(`file://${path.join(work, 'storage')}`);
  });

  after(async () => {
    client?.disconnect();
    await cluster?.close();
    await rm(work, { recursive: true, force: true });
  });

  test('the reachability check answers', async () => {
    await checkRedisReachable(cluster.url);
  });

  test("every queue's keys share one slot: BullMQ's scripts and a document's flow run there", async () => {
    const queues = [DOCUMENTS, ...PAGE_QUEUES].map((queue) => new Queue(queue.name, { connection: redisOptions(cluster.url, 'client'), prefix: queue.prefix }));
    const flows = new FlowProducer({ connection: redisOptions(cluster.url, 'client'), prefix: DOCUMENTS.prefix });
    try {
      for (const queue of queues) {
        await queue.add('probe', {}, { jobId: 'probe', delay: 60_000 });
        assert.equal((await queue.getJobCounts('delayed')).delayed, 1);
      }
      // A parent on the documents queue with children on a page queue: one transaction over both queues.
      await flows.add({ name: 'parent', queueName: DOCUMENTS.name, data: {}, children: [{ name: 'child', queueName: PAGE_QUEUES[0].name, data: {} }] });
      const keys = await scanKeys(client, `${DOCUMENTS.prefix}:*`);
      assert.ok(keys.length > 10);
      const slots = new Set(await Promise.all(keys.map((key) => client.cluster('KEYSLOT', key))));
      assert.equal(slots.size, 1, `the queues' keys hash to ${slots.size} slots`);
    } finally {
      await Promise.all([...queues.map((queue) => queue.obliterate({ force: true })), flows.close()]);
      await Promise.all(queues.map((queue) => queue.close()));
    }
  });

  test("Redis's memory is the master's that holds the queues: one short of memory there refuses new work, elsewhere not", async () => {
    const slot = Number(await (client as Cluster).cluster('KEYSLOT', DOCUMENTS.prefix));
    const nodes = cluster.ports.map((port) => new Redis({ host: '127.0.0.1', port }));
    const capacity = new QueueCapacity(cluster.url, undefined);
    try {
      const ownsSlot = async (node: Redis) => {
        const ranges = (await node.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
        const port = node.options.port;
        return ranges.some(([first, last, [, master]]) => first <= slot && slot <= last && master === port);
      };
      const owners = await Promise.all(nodes.map(ownsSlot));
      const holder = nodes[owners.indexOf(true)];
      const other = nodes[owners.indexOf(false)];
      const limitBelowUse = async (node: Redis) => {
        const used = Number(/^used_memory:(\d+)/m.exec(await node.info('memory'))![1]);
        await node.config('SET', 'maxmemory', String(Math.floor(used / 0.95)));
      };
      await limitBelowUse(other);
      assert.equal((await capacity.admit('v1', 1)).admitted, true, 'another master short of memory does not matter');
      assert.equal((await redisMemory(client)).maxBytes, null);
      await limitBelowUse(holder);
      const refused = await capacity.admit('v1', 1);
      assert.ok(!refused.admitted && refused.reason === 'redis-memory', JSON.stringify(refused));
    } finally {
      await Promise.all(nodes.map((node) => node.config('SET', 'maxmemory', '0')));
      await capacity.close();
      nodes.forEach((node) => node.disconnect());
    }
  });

  test('a queue prefix without a hash tag fails there with CROSSSLOT (what the tag prevents)', async () => {
    const untagged = new Queue('pages-v1', { connection: redisOptions(cluster.url, 'client'), prefix: 'scriptorium' });
    try {
      await assert.rejects(untagged.add('probe', {}), /CROSSSLOT/);
    } finally {
      await untagged.close();
    }
  });

  test('live workers are listed and page claims count a dead reader', async () => {
    const alive = await LiveWorkerHeartbeat.start(client, IDENTITY, IDLE, { intervalMs: 100 });
    try {
      assert.deepEqual(
        (await listLiveWorkers(client)).map((worker) => worker.host),
        ['elsewhere'],
      );
      await client.hset(`${DOCUMENTS.prefix}:page-claims:job-1`, `${DOCUMENTS.prefix}:workers:gone:1:x token-1`, JSON.stringify({ host: 'elsewhere', pid: 1 }));
      await client.hset(`${DOCUMENTS.prefix}:page-claims:job-1`, `${alive.key} token-2`, JSON.stringify({ host: 'elsewhere', pid: 1 }));
      const taker = new PageClaims({ redis: client, workerKey: 'taker' });
      await taker.claim('job-1', 'token-3');
      assert.equal(await taker.deaths('job-1'), 1);
    } finally {
      await alive.stop();
    }
    assert.deepEqual(await listLiveWorkers(client), []);
  });

  test('a --redis-list without a hash tag is refused there, naming the fix', async () => {
    await assert.rejects(
      startRedisListSource({ redisUrl: cluster.url, listKey: 'bucket-events', enqueuer: { enqueueNotification: async () => [] }, logger: silent }),
      /--redis-list "bucket-events" has no hash tag: .* e\.g\. "\{bucket-events\}"/,
    );
  });

  describe('a 4-page PDF enqueued and read by a worker', () => {
    let summary: EnqueueSummary;
    let workers: OcrWorkers | undefined;
    let workersSeen: string[] = [];

    before(async () => {
      const input = path.join(work, 'report.pdf');
      await writeFile(input, await makePdf([LETTER, LETTER, LETTER, LETTER], 3));
      summary = await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(cluster.url, 'client') });
      const model = { dir: await tinyCheckpoint('v1'), synthetic: true };
      workers = await startOcrWorkers({ model, checkpointId: 'sha256:tiny-v1', threads: 1, storage, redisUrl: cluster.url, batch: 2, concurrency: 2, logger: silent });
      workersSeen = (await listLiveWorkers(client)).map((worker) => worker.host);
      const done = `results/${summary.queued[0].docId}/_DONE`;
      const deadline = Date.now() + 180_000;
      while (!(await storage.exists(done))) {
        if (Date.now() > deadline) throw new Error('the document was not done within 180 s');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });

    after(async () => {
      await workers?.close();
    });

    test('every page is read and the document assembled', async () => {
      assert.equal(summary.documents, 1);
      assert.equal(summary.pages, 4);
      const document = JSON.parse((await storage.get(`results/${summary.queued[0].docId}/document.json`)).toString()) as DocumentResultJson;
      assert.equal(document.pages.length, 4);
      assert.deepEqual(document.failedPages, []);
    });

    test('the worker was listed alive while it read', () => {
      assert.deepEqual(workersSeen, [os.hostname()]);
    });

    test('status reads the queues, the throughput counters and the live workers there', async () => {
      const status = await readQueueStatus(cluster.url, { windowMinutes: 10, failedShown: 5 });
      assert.equal(status.documents.completed, 1);
      assert.deepEqual(
        status.pages.map(({ kind, completed, left }) => ({ kind, completed, left })),
        [{ kind: 'v1-markdown-tiny', completed: 4, left: 0 }],
      );
      assert.equal(status.liveWorkers.length, 1);
      const documents = status.queues.find((counts) => counts.queue.name === DOCUMENTS.name);
      assert.equal(documents?.counts.completed, 1);
    });
  });
});
