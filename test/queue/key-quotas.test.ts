// Quotas per API key on a real Redis: a document's place in flight freed once its document job has
// finished, kept while it runs, and freed after the grace when its job is gone (so that nothing
// leaks when a submission dies half-way or a job is removed); the day's page count expiring and
// starting again each UTC day; a reservation given back; the recorded keys with their usage.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

import { ADMISSION_GRACE_MS, KeyQuotas, type KeyQuota } from '../../src/queue/key-quotas.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { waitUntil } from '../support/worker-processes.js';

const DOC_A = 'a'.repeat(32);
const DOC_B = 'b'.repeat(32);
const QUOTA: KeyQuota = { priorityClass: 'interactive', pagesPerDay: 10, documentsInFlight: 1 };
const T0 = Date.parse('2026-03-04T23:00:00Z');

describe('quotas per API key', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let client: Redis;
  let quotas: KeyQuotas;
  let documents: Queue;

  before(() => {
    client = new Redis(redis.url);
    quotas = new KeyQuotas(client);
    documents = new Queue(DOCUMENTS.name, { connection: redisOptions(redis.url, 'client'), prefix: DOCUMENTS.prefix });
  });
  beforeEach(() => redis.flush());
  after(async () => {
    await documents.close();
    client.disconnect();
  });

  test('a document keeps its place while its job runs and frees it once the job has finished', async () => {
    await documents.add('document', {}, { jobId: DOC_A });
    assert.equal((await quotas.admit('alice', QUOTA, { docId: DOC_A, pages: 2 })).admitted, true);
    const refused = await quotas.admit('alice', QUOTA, { docId: DOC_B, pages: 1 });
    assert.deepEqual(refused, { admitted: false, refusal: { quota: 'documents-in-flight', limit: 1, usage: 1, resetsAt: null } });

    const worker = new Worker(DOCUMENTS.name, async () => ({}), { connection: redisOptions(redis.url, 'worker'), prefix: DOCUMENTS.prefix });
    try {
      await waitUntil(async () => (await (await documents.getJob(DOC_A))?.getState()) === 'completed', 10_000, 'the document job completed');
    } finally {
      await worker.close();
    }
    assert.equal((await quotas.usage('alice')).documentsInFlight, 0);
    assert.equal((await quotas.admit('alice', QUOTA, { docId: DOC_B, pages: 1 })).admitted, true);
  });

  test('a docId whose document job is gone keeps its place for the grace, then frees it', async () => {
    assert.equal((await quotas.admit('alice', QUOTA, { docId: DOC_A, pages: 2 }, T0)).admitted, true);
    assert.equal((await quotas.usage('alice', T0 + ADMISSION_GRACE_MS)).documentsInFlight, 1, 'within the grace: its flow may be on its way');
    assert.equal((await quotas.usage('alice', T0 + ADMISSION_GRACE_MS + 1)).documentsInFlight, 0, 'past the grace: lost, freed');
  });

  test("the day's pages are refused beyond the limit, expire, and start again on the next UTC day", async () => {
    assert.equal((await quotas.admit('alice', { priorityClass: 'bulk', pagesPerDay: 10 }, { docId: DOC_A, pages: 8 }, T0)).admitted, true);
    const refused = await quotas.admit('alice', { priorityClass: 'bulk', pagesPerDay: 10 }, { docId: DOC_B, pages: 3 }, T0);
    assert.deepEqual(refused, { admitted: false, refusal: { quota: 'pages-per-day', limit: 10, usage: 8, resetsAt: '2026-03-05T00:00:00.000Z' } });
    const ttl = await client.ttl('{scriptorium}:quota:pages:alice:2026-03-04');
    assert.ok(ttl > 0 && ttl <= 2 * 24 * 3600, `the counter expires (TTL ${ttl} s)`);
    const nextDay = T0 + 3600_000;
    assert.equal((await quotas.admit('alice', { priorityClass: 'bulk', pagesPerDay: 10 }, { docId: DOC_B, pages: 3 }, nextDay)).admitted, true);
    // DOC_A's job never existed and its grace has passed: only DOC_B is in flight.
    assert.deepEqual(await quotas.usage('alice', nextDay), { pagesToday: 3, documentsInFlight: 1, resetsAt: '2026-03-06T00:00:00.000Z' });
  });

  test('a reservation given back frees its pages and its place', async () => {
    const admitted = await quotas.admit('alice', QUOTA, { docId: DOC_A, pages: 4 }, T0);
    assert.ok(admitted.admitted);
    await quotas.release(admitted.reservation);
    assert.deepEqual(await quotas.usage('alice', T0), { pagesToday: 0, documentsInFlight: 0, resetsAt: '2026-03-05T00:00:00.000Z' });
  });

  test('the recorded keys are listed with their quotas and usage, replaced by the next record', async () => {
    await quotas.recordKeys([{ name: 'old', quota: QUOTA }]);
    await quotas.recordKeys([
      { name: 'bulk-user', quota: { priorityClass: 'bulk', pagesPerDay: 100 } },
      { name: 'alice', quota: QUOTA },
    ]);
    await quotas.admit('alice', QUOTA, { docId: DOC_A, pages: 2 }, T0);
    assert.deepEqual(await quotas.recordedUsage(T0), [
      { name: 'alice', quota: QUOTA, usage: { pagesToday: 2, documentsInFlight: 1, resetsAt: '2026-03-05T00:00:00.000Z' } },
      { name: 'bulk-user', quota: { priorityClass: 'bulk', pagesPerDay: 100 }, usage: { pagesToday: 0, documentsInFlight: 0, resetsAt: '2026-03-05T00:00:00.000Z' } },
    ]);
  });
});
