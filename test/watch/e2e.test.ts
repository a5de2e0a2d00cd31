// From a dropped file to its results with no enqueue command: documents uploaded to a bucket on the S3
// protocol (s3rver) announce themselves as MinIO's Redis target would, the watch enqueues them, a
// worker on a tiny checkpoint reads them, and document.md appears in the same bucket. The results
// written there announce themselves too, and start nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';
import { pino } from 'pino';

import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { documentId } from '../../src/producer/doc-id.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { processingListKey, startRedisListSource, type RedisListSource } from '../../src/watch/redis-list-source.js';
import { S3EventEnqueuer, type UploadOutcome } from '../../src/watch/s3-event-enqueuer.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { relayToRedisList, type NotificationRelay } from '../support/s3-notifications.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const LIST = 'minio-events';
const PDF_KEY = 'inbox/report 1+2.pdf';
const PNG_KEY = 'inbox/scans/page.png';
const logger = pino({ level: 'silent' });

async function until(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('a file dropped into the bucket is read with no enqueue command', { skip: REDIS_SERVER_MISSING }, () => {
  // Started and stopped here rather than by useTestRedis: the workers and the watch must close before Redis stops.
  let redis: EmbeddedRedis;
  let s3: S3Server;
  let bucket: S3Storage;
  let relay: NotificationRelay;
  let enqueuer: S3EventEnqueuer;
  let watch: RedisListSource;
  let workers: OcrWorkers;
  const outcomes: UploadOutcome[] = [];
  const docIds: Record<string, string> = {};

  before(async () => {
    redis = await startEmbeddedRedis();
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['scriptorium'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    // Sources, staging and results share the bucket, as in docker-compose.yml.
    bucket = openStorage('s3://scriptorium') as S3Storage;
    relay = relayToRedisList(s3, redis.url, LIST);
    enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage: bucket }, redisUrl: redis.url, logger });
    const recording = {
      async enqueueNotification(text: string, log = logger) {
        const handled = await enqueuer.enqueueNotification(text, log);
        outcomes.push(...handled);
        return handled;
      },
    };
    watch = await startRedisListSource({ redisUrl: redis.url, listKey: LIST, enqueuer: recording, logger });
    workers = await startOcrWorkers({ model: { dir: await tinyCheckpoint('v1'), synthetic: true }, checkpointId: 'sha256:tiny-v1', threads: 1, storage: bucket, redisUrl: redis.url, batch: 2, logger });

    const pdf = await makePdf([LETTER], 2);
    const png = await makePng();
    docIds[PDF_KEY] = documentId(pdf, OCR);
    docIds[PNG_KEY] = documentId(png, OCR);
    await bucket.put(PDF_KEY, pdf);
    await bucket.put(PNG_KEY, png);

    await until(async () => (await Promise.all(Object.values(docIds).map((id) => bucket.exists(`results/${id}/_DONE`)))).every(Boolean), 'both documents', 180_000);
    // Every notification so far, the results' included, is on the list and has been handled.
    await relay.delivered();
    const events = new Redis(redis.url);
    try {
      await until(async () => (await events.llen(LIST)) + (await events.llen(processingListKey(LIST))) === 0, 'the event lists to drain', 30_000);
    } finally {
      events.disconnect();
    }
  });

  after(async () => {
    await workers?.close();
    await watch?.close();
    await enqueuer?.close();
    await relay?.close();
    bucket?.destroy();
    await s3?.close();
    await redis?.close();
    delete process.env.S3_ENDPOINT;
  });

  test('each dropped file has its document.md in the bucket', async () => {
    for (const [key, docId] of Object.entries(docIds)) {
      assert.ok((await bucket.get(`results/${docId}/document.md`)).length > 0, key);
      const document = JSON.parse((await bucket.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
      assert.equal(document.source.uri, `s3://scriptorium/${key}`);
      assert.deepEqual(document.failedPages, []);
    }
  });

  test('the watch enqueued exactly the two dropped files', () => {
    const enqueued = outcomes.filter((outcome) => outcome.state === 'enqueued');
    assert.deepEqual(enqueued.map(({ key, docId }) => ({ key, docId })).sort((a, b) => a.key.localeCompare(b.key)), [
      { key: PDF_KEY, docId: docIds[PDF_KEY] },
      { key: PNG_KEY, docId: docIds[PNG_KEY] },
    ]);
  });

  test('the staged sources and the results announced themselves and started nothing', async () => {
    const others = outcomes.filter((outcome) => outcome.state !== 'enqueued');
    assert.ok(others.some((outcome) => outcome.key.startsWith('results/') && outcome.key.endsWith('/document.md')), 'the results were announced');
    assert.ok(others.some((outcome) => outcome.key.startsWith('staging/')), 'the staged sources were announced');
    assert.deepEqual([...new Set(others.map((outcome) => outcome.state))], ['pipeline-output']);
    const rejected: string[] = [];
    for await (const object of bucket.list('rejected/', { recursive: true })) rejected.push(object.key);
    assert.deepEqual(rejected, []);
  });
});
