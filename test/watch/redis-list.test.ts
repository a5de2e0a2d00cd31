// The Redis-list source against a real redis-server, with entries as MinIO's Redis target pushes them
// (access format): an entry leaves the processing list only once its documents are enqueued, one left
// there by a crashed watch is enqueued when a watch starts, and one that is no notification is set aside.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { malformedListKey, processingListKey, startRedisListSource, type RedisListSource } from '../../src/watch/redis-list-source.js';
import { S3EventEnqueuer } from '../../src/watch/s3-event-enqueuer.js';
import { FlakyStorage } from '../support/flaky-storage.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { encodeS3EventKey, eventRecord } from '../support/s3-notifications.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const LIST = 'minio-events';
const logger = pino({ level: 'silent' });

/** A list entry as MinIO's Redis target writes it for one upload to the inbox bucket. */
function minioEntry(key: string, eTag: string): string {
  return JSON.stringify([{ Event: [eventRecord('s3:ObjectCreated:Put', { bucket: 'inbox', key: encodeS3EventKey(key), eTag })], EventTime: '2024-05-01T12:00:00.000Z' }]);
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the Redis-list source', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let inbox: S3Storage;
  let work: string;
  let storage: FlakyStorage;
  let client: Redis;
  let documents: Queue;
  let enqueuer: S3EventEnqueuer;
  let source: RedisListSource | undefined;
  let pdf: Buffer;
  let png: Buffer;

  const start = async () => {
    source = await startRedisListSource({ redisUrl: redis.url, listKey: LIST, enqueuer, logger });
    return source;
  };
  const hasJob = async (bytes: Buffer) => (await documents.getJob(documentId(bytes, OCR))) !== undefined;
  const listsEmpty = async () => (await client.llen(LIST)) === 0 && (await client.llen(processingListKey(LIST))) === 0;

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['inbox'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    inbox = openStorage('s3://inbox') as S3Storage;
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-watch-redis-'));
    client = new Redis(redis.url);
    documents = new Queue(DOCUMENTS.name, { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
    pdf = await makePdf([LETTER], 2);
    png = await makePng();
    await inbox.put('scans/first page.pdf', pdf);
    await inbox.put('scans/second.png', png);
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FlakyStorage(await mkdtemp(path.join(work, 'storage-')));
    enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage }, redisUrl: redis.url, logger });
  });
  afterEach(async () => {
    await source?.close();
    source = undefined;
    await enqueuer.close();
  });
  after(async () => {
    await documents?.close();
    client?.disconnect();
    inbox?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(work, { recursive: true, force: true });
  });

  test('an entry pushed by MinIO is enqueued and then leaves no trace in the lists', async () => {
    await start();
    await client.rpush(LIST, minioEntry('scans/first page.pdf', '"a1"'));
    await until(() => hasJob(pdf), 'the document job');
    await until(listsEmpty, 'both lists to empty');
  });

  test('entries waiting before the watch starts are all taken, in order', async () => {
    await client.rpush(LIST, minioEntry('scans/first page.pdf', '"a1"'), minioEntry('scans/second.png', '"b1"'));
    await start();
    await until(async () => (await hasJob(pdf)) && (await hasJob(png)), 'both document jobs');
    await until(listsEmpty, 'both lists to empty');
  });

  test('an entry left in the processing list by a crashed watch is enqueued when a watch starts', async () => {
    await client.rpush(processingListKey(LIST), minioEntry('scans/first page.pdf', '"a1"'));
    await start();
    await until(() => hasJob(pdf), 'the document job');
    await until(listsEmpty, 'both lists to empty');
  });

  test('while enqueueing fails the entry stays in the processing list; it is enqueued once enqueueing works', async () => {
    storage.failing = true;
    await start();
    const entry = minioEntry('scans/first page.pdf', '"a1"');
    await client.rpush(LIST, entry);
    await until(async () => storage.failedPuts >= 1, 'a failed attempt');
    assert.deepEqual(await client.lrange(processingListKey(LIST), 0, -1), [entry]);
    assert.equal(await hasJob(pdf), false);
    storage.failing = false;
    await until(() => hasJob(pdf), 'the document job');
    await until(listsEmpty, 'both lists to empty');
  });

  test('an entry stopped mid-failure stays for the next watch', async () => {
    storage.failing = true;
    await start();
    const entry = minioEntry('scans/first page.pdf', '"a1"');
    await client.rpush(LIST, entry);
    await until(async () => storage.failedPuts >= 1, 'a failed attempt');
    await source!.close();
    source = undefined;
    assert.deepEqual(await client.lrange(processingListKey(LIST), 0, -1), [entry]);
    storage.failing = false;
    await start();
    await until(() => hasJob(pdf), 'the document job');
    await until(listsEmpty, 'both lists to empty');
  });

  test('an entry that is no notification is set aside and the next one is still enqueued', async () => {
    await start();
    await client.rpush(LIST, 'this is not JSON', minioEntry('scans/second.png', '"b1"'));
    await until(() => hasJob(png), 'the document job');
    await until(listsEmpty, 'both lists to empty');
    assert.deepEqual(await client.lrange(malformedListKey(LIST), 0, -1), ['this is not JSON']);
  });

  test("a key holding MinIO's namespace-format hash is refused with a clear error", async () => {
    await client.hset(LIST, 'inbox/a.pdf', '{}');
    await assert.rejects(start(), /holds a hash, not a list of events: configure MinIO's Redis target with format=access/);
  });
});
