// `serve` at archive scale, over real HTTP and a real Redis: submissions beyond --max-queued-pages
// answered 429 (Retry-After from the measured rate) until pages drain, 503 while Redis is nearly out
// of memory, GET /v1/capacity's figures, each API key's quotas (pages per day, documents in flight)
// answered 429 with a body naming the quota, shared by two servers and never passed by submissions at
// the same moment, in-flight places freed when documents settle or are cancelled, and bulk keys'
// work queued behind interactive work.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';

import { ScriptoriumClient } from '../../src/client/scriptorium-client.js';
import { hashApiKey, parseApiKeys } from '../../src/server/api-keys.js';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../../src/server/api-server.js';
import type { CapacityAnswer } from '../../src/server/api-types.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { BULK_PRIORITY_OFFSET, DEFAULT_PRIORITY } from '../../src/queue/job-options.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { countCompleted } from '../../src/queue/throughput.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { checkAnswer } from '../support/openapi-check.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { waitUntil } from '../support/worker-processes.js';

const OPEN_KEY = 'key-without-quotas';
const BULK_KEY = 'key-of-a-bulk-user';
const silent = pino({ level: 'silent' });
const hex = (key: string) => hashApiKey(key).toString('hex');
/** alice: interactive, no quotas; batch: bulk, 3 pages a day and 1 document in flight. */
const API_KEYS = parseApiKeys(`alice:sha256:${hex(OPEN_KEY)},batch:sha256:${hex(BULK_KEY)}:class=bulk:pages-per-day=3:in-flight=1`);
const OPTIONS = { variant: 'v1', mode: 'tiny', dpi: 36, maxTokens: 6 };

test("SCRIPTORIUM_API_KEYS gives each key its class and quotas, and names a wrong setting", () => {
  const hash = hex(OPEN_KEY);
  assert.deepEqual(
    parseApiKeys(`a:sha256:${hash},b:sha256:${hash}:in-flight=20:class=bulk:pages-per-day=5000`).map(({ name, quota }) => ({ name, quota })),
    [
      { name: 'a', quota: { priorityClass: 'interactive' } },
      { name: 'b', quota: { priorityClass: 'bulk', pagesPerDay: 5000, documentsInFlight: 20 } },
    ],
  );
  assert.throws(() => parseApiKeys(`b:sha256:${hash}:class=urgent`), /API key "b": class must be one of interactive, bulk \(got "urgent"\)/);
  assert.throws(() => parseApiKeys(`b:sha256:${hash}:pages-per-day=0`), /pages-per-day must be a whole number from 1/);
  assert.throws(() => parseApiKeys(`b:sha256:${hash}:in-flight=1:in-flight=2`), /in-flight is given twice/);
  assert.throws(() => parseApiKeys(`b:sha256:${hash}:burst=3`), /unknown setting "burst"/);
});

describe('serve: capacity and quotas', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let client: Redis;
  let root: string;
  let storage: Storage;
  let pages: Queue;
  let documents: Queue;
  const servers: ApiServer[] = [];
  const workers: Worker[] = [];

  const startServer = async (extra: Partial<ApiServerOptions> = {}) => {
    const server = await startApiServer({ host: '127.0.0.1', port: 0, redisUrl: redis.url, storage, apiKeys: API_KEYS, defaultVariant: 'v1', logger: silent, ...extra });
    servers.push(server);
    return server;
  };
  /** A one-page PDF of its own for each n, so that every submission is a new document. */
  const onePage = (n: number) => makePdf([LETTER], n);
  const submit = async (server: ApiServer, key: string, pdf: Buffer) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(OPTIONS)) form.append(name, String(value));
    form.append('document', new Blob([Uint8Array.from(pdf)]), 'doc.pdf');
    const response = await fetch(new URL('/v1/documents', server.url), { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const body = await response.json();
    checkAnswer('POST', '/v1/documents', response.status, body);
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body };
  };
  const capacity = async (server: ApiServer, key: string): Promise<CapacityAnswer> => {
    const response = await fetch(new URL('/v1/capacity', server.url), { headers: { authorization: `Bearer ${key}` } });
    const body = await response.json();
    checkAnswer('GET', '/v1/capacity', response.status, body);
    assert.equal(response.status, 200);
    return body as CapacityAnswer;
  };
  /** Stand-ins for `scriptorium work`: every page job and document job completes at once. */
  const drainQueues = () => {
    const connection = redisOptions(redis.url, 'worker');
    workers.push(new Worker(pageQueue('v1').name, async () => ({}), { connection, prefix: DOCUMENTS.prefix }));
    workers.push(new Worker(DOCUMENTS.name, async () => ({}), { connection, prefix: DOCUMENTS.prefix }));
  };

  before(async () => {
    redis = await startEmbeddedRedis();
    client = new Redis(redis.url);
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-capacity-'));
    storage = openStorage(path.join(root, 'storage'));
    const connection = redisOptions(redis.url, 'client');
    pages = new Queue(pageQueue('v1').name, { connection, prefix: DOCUMENTS.prefix });
    documents = new Queue(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
  });
  beforeEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.close()));
    await Promise.all(servers.splice(0).map((server) => server.close()));
    await client.flushall();
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await Promise.all(servers.map((server) => server.close()));
    await Promise.all([pages.close(), documents.close()]);
    client.disconnect();
    await redis.close();
    await rm(root, { recursive: true, force: true });
  });

  test('beyond --max-queued-pages a submission is answered 429 with Retry-After, and accepted once pages drain', async () => {
    const server = await startServer({ maxQueuedPages: 2 });
    assert.equal((await submit(server, OPEN_KEY, await makePdf([LETTER, LETTER], 1))).status, 202);
    const full = await capacity(server, OPEN_KEY);
    assert.deepEqual(full.variants.v1, { queue: '{scriptorium}:pages-v1', queuedPages: 2, maxQueuedPages: 2, acceptingPages: 0 });
    assert.deepEqual(full.variants.v3, { queue: '{scriptorium}:pages-v3', queuedPages: 0, maxQueuedPages: 2, acceptingPages: 2 });
    assert.deepEqual({ max: full.redis.maxMemoryBytes, accepting: full.redis.accepting }, { max: null, accepting: true });
    assert.ok(full.redis.usedMemoryBytes > 0);

    const refused = await submit(server, OPEN_KEY, await onePage(2));
    assert.equal(refused.status, 429);
    assert.match(refused.body.error, /the queue is full: \{scriptorium\}:pages-v1 holds 2 page jobs and this document adds 1, over the limit of 2/);
    assert.equal(refused.retryAfter, '60', 'no pages completed lately: the stated default');
    assert.equal((await capacity(server, OPEN_KEY)).variants.v1.queuedPages, 2, 'nothing of the refused document was queued');

    // 30 pages a minute completed: the one page job over the limit drains in about 2 s.
    await countCompleted(client, { queue: pageQueue('v1'), kind: 'v1-markdown-tiny' }, 30);
    const estimated = await submit(server, OPEN_KEY, await onePage(2));
    assert.equal(estimated.status, 429);
    assert.ok(Number(estimated.retryAfter) >= 2 && Number(estimated.retryAfter) <= 4, `Retry-After ${estimated.retryAfter}`);

    drainQueues();
    await waitUntil(async () => (await capacity(server, OPEN_KEY)).variants.v1.queuedPages === 0, 30_000, 'the pages drained');
    assert.equal((await submit(server, OPEN_KEY, await onePage(2))).status, 202);
  });

  test('while Redis has used 90% of its maxmemory a submission is answered 503 with Retry-After', async () => {
    const server = await startServer();
    const used = Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1]);
    await client.config('SET', 'maxmemory', String(Math.ceil(used / 0.92)));
    try {
      const refused = await submit(server, OPEN_KEY, await onePage(3));
      assert.equal(refused.status, 503);
      assert.match(refused.body.error, /Redis is short of memory: .* new work is refused from 90%/);
      assert.equal(refused.retryAfter, '60');
      const answer = await capacity(server, OPEN_KEY);
      assert.equal(answer.redis.accepting, false);
      assert.equal(answer.variants.v1.acceptingPages, 0);
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    assert.equal((await submit(server, OPEN_KEY, await onePage(3))).status, 202);
  });

  test("a key's quotas: 429 naming the quota, its limit, its usage and when it resets; in flight freed on completion", async () => {
    const server = await startServer();
    const first = await submit(server, BULK_KEY, await makePdf([LETTER, LETTER], 4));
    assert.equal(first.status, 202);
    const pageJob = await pages.getJob(`${first.body.docId}.p1-1`);
    assert.equal(pageJob?.opts.priority, DEFAULT_PRIORITY + BULK_PRIORITY_OFFSET, 'a bulk key queues behind interactive work');

    const inFlight = await submit(server, BULK_KEY, await onePage(5));
    assert.equal(inFlight.status, 429);
    assert.deepEqual({ ...inFlight.body, error: undefined }, { error: undefined, quota: 'documents-in-flight', limit: 1, usage: 1, resetsAt: null });
    assert.equal(inFlight.retryAfter, '60');
    assert.deepEqual((await capacity(server, BULK_KEY)).key, {
      name: 'batch',
      priorityClass: 'bulk',
      pagesToday: 2,
      pagesPerDay: 3,
      documentsInFlight: 1,
      documentsInFlightLimit: 1,
      resetsAt: nextUtcMidnight(),
    });
    assert.equal((await capacity(server, OPEN_KEY)).key.pagesToday, 0, 'each key counts its own');
    assert.equal((await new ScriptoriumClient({ baseUrl: server.url, apiKey: BULK_KEY }).capacity()).key.documentsInFlight, 1, 'the client reads it too');

    drainQueues();
    await waitUntil(async () => (await capacity(server, BULK_KEY)).key.documentsInFlight === 0, 30_000, 'the document settled');
    assert.equal((await submit(server, BULK_KEY, await onePage(5))).status, 202, 'the settled document freed its place');
    await waitUntil(async () => (await capacity(server, BULK_KEY)).key.documentsInFlight === 0, 30_000, 'the second document settled');

    const perDay = await submit(server, BULK_KEY, await onePage(6));
    assert.equal(perDay.status, 429);
    assert.deepEqual({ ...perDay.body, error: undefined }, { error: undefined, quota: 'pages-per-day', limit: 3, usage: 3, resetsAt: nextUtcMidnight() });
    const untilMidnight = (Date.parse(nextUtcMidnight()) - Date.now()) / 1000;
    assert.ok(Math.abs(Number(perDay.retryAfter) - untilMidnight) < 5, `Retry-After ${perDay.retryAfter} is the time to midnight`);
    const tooLarge = await submit(server, BULK_KEY, await makePdf([LETTER, LETTER, LETTER, LETTER], 7));
    assert.equal(tooLarge.status, 413);
    assert.match(tooLarge.body.error, /has 4 pages to read, more than this key's quota of 3 pages a day/);
  });

  test('two servers share the counts, and submissions at the same moment never pass a quota together', async () => {
    const [a, b] = [await startServer(), await startServer()];
    assert.equal((await submit(a, BULK_KEY, await onePage(8))).status, 202);
    const refused = await submit(b, BULK_KEY, await onePage(9));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.quota, 'documents-in-flight');
    assert.deepEqual(
      { pagesToday: (await capacity(b, BULK_KEY)).key.pagesToday, inFlight: (await capacity(b, BULK_KEY)).key.documentsInFlight },
      { pagesToday: 1, inFlight: 1 },
    );

    await client.flushall();
    const documentsAtOnce = await Promise.all([10, 11, 12, 13, 14, 15].map(onePage));
    const answers = await Promise.all(documentsAtOnce.map((pdf, i) => submit(i % 2 === 0 ? a : b, BULK_KEY, pdf)));
    assert.deepEqual(answers.map(({ status }) => status).sort(), [202, 429, 429, 429, 429, 429]);
  });

  test('a cancelled document frees its place in flight at once and gives back its pages never read', async () => {
    const server = await startServer();
    const cancel = (link: string) => fetch(new URL(link, server.url), { method: 'DELETE', headers: { authorization: `Bearer ${BULK_KEY}` } });
    const threePages = (n: number) => makePdf([LETTER, LETTER, LETTER], n);
    const submitted = await submit(server, BULK_KEY, await threePages(16));
    assert.equal(submitted.status, 202);
    assert.equal((await capacity(server, BULK_KEY)).key.pagesToday, 3);
    assert.equal((await cancel(submitted.body.links.self)).status, 202);
    let key = (await capacity(server, BULK_KEY)).key;
    assert.deepEqual([key.documentsInFlight, key.pagesToday], [0, 0], 'no worker took a page: all three are given back');
    // Cancelling again gives nothing more back.
    const again = await submit(server, BULK_KEY, await threePages(17));
    assert.equal(again.status, 202, 'the whole day\'s quota is free again');
    assert.equal((await cancel(submitted.body.links.self)).status, 202);
    key = (await capacity(server, BULK_KEY)).key;
    assert.deepEqual([key.documentsInFlight, key.pagesToday], [1, 3]);
  });
});

function nextUtcMidnight(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
}
