// The SQS source with @aws-sdk/client-sqs against a minimal in-test SQS (the JSON protocol's
// ReceiveMessage and DeleteMessage), a real Redis and s3rver: a message is deleted only after its
// documents are enqueued; a failed enqueue leaves it to come back; SNS-wrapped notifications are read,
// S3's test event is deleted without effect, and a message that is no notification stays in the queue.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { S3EventEnqueuer } from '../../src/watch/s3-event-enqueuer.js';
import { sqsRegionOf, startSqsSource, type SqsSource } from '../../src/watch/sqs-source.js';
import { FlakyStorage } from '../support/flaky-storage.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { createdNotification } from '../support/s3-notifications.js';
import { startSqsServer, type TestSqsServer } from '../support/sqs-server.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const logger = pino({ level: 'silent' });

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the SQS source', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let inbox: S3Storage;
  let work: string;
  let storage: FlakyStorage;
  let documents: Queue;
  let enqueuer: S3EventEnqueuer;
  let sqs: TestSqsServer;
  let source: SqsSource;
  let pdf: Buffer;
  let png: Buffer;

  const hasJob = async (bytes: Buffer) => (await documents.getJob(documentId(bytes, OCR))) !== undefined;

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['inbox'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    inbox = openStorage('s3://inbox') as S3Storage;
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-watch-sqs-'));
    documents = new Queue(DOCUMENTS.name, { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
    pdf = await makePdf([LETTER], 2);
    png = await makePng();
    await inbox.put('scans/a.pdf', pdf);
    await inbox.put('scans/b.png', png);
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FlakyStorage(await mkdtemp(path.join(work, 'storage-')));
    enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage }, redisUrl: redis.url, logger });
    sqs = await startSqsServer({ visibilityTimeoutMs: 300 });
    source = startSqsSource({ queueUrl: sqs.queueUrl, region: 'us-east-1', enqueuer, logger, waitSeconds: 1 });
  });
  afterEach(async () => {
    await source.close();
    await sqs.close();
    await enqueuer.close();
  });
  after(async () => {
    await documents?.close();
    inbox?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(work, { recursive: true, force: true });
  });

  test('a message is deleted only after its documents are enqueued', async () => {
    const enqueuedWhenDeleted: boolean[] = [];
    sqs.onDelete = async () => {
      enqueuedWhenDeleted.push(await hasJob(pdf));
    };
    const id = sqs.send(createdNotification('inbox', [{ key: 'scans/a.pdf', eTag: '"a"' }]));
    await until(() => sqs.deleted.includes(id), 'the delete');
    assert.deepEqual(enqueuedWhenDeleted, [true]);
    assert.deepEqual(sqs.messages, []);
  });

  test('S3 → SNS → SQS: the notification inside the SNS message is enqueued', async () => {
    const sns = { Type: 'Notification', MessageId: 'n-1', TopicArn: 'arn:aws:sns:us-east-1:000000000000:uploads', Message: createdNotification('inbox', [{ key: 'scans/b.png', eTag: '"b"' }]) };
    const id = sqs.send(JSON.stringify(sns));
    await until(() => sqs.deleted.includes(id), 'the delete');
    assert.equal(await hasJob(png), true);
  });

  test("S3's test event is deleted and enqueues nothing", async () => {
    const id = sqs.send(JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Time: '2024-05-01T12:00:00.000Z', Bucket: 'inbox', RequestId: 'R', HostId: 'H' }));
    await until(() => sqs.deleted.includes(id), 'the delete');
    assert.equal(Object.values(await documents.getJobCounts()).reduce((sum, n) => sum + n, 0), 0);
  });

  test('a message whose enqueue fails is not deleted; it comes back and is enqueued once enqueueing works', async () => {
    storage.failing = true;
    const id = sqs.send(createdNotification('inbox', [{ key: 'scans/a.pdf', eTag: '"a"' }]));
    await until(() => storage.failedPuts >= 1 && sqs.messages.some((m) => m.messageId === id), 'a failed attempt');
    assert.deepEqual(sqs.deleted, []);
    assert.equal(await hasJob(pdf), false);
    storage.failing = false;
    await until(() => sqs.deleted.includes(id), 'the delete');
    assert.equal(await hasJob(pdf), true);
    assert.ok(sqs.messages.length === 0);
  });

  test('a message that is no notification stays in the queue for its redrive policy; the others go on', async () => {
    const bad = sqs.send('not an S3 event');
    const good = sqs.send(createdNotification('inbox', [{ key: 'scans/b.png', eTag: '"b"' }]));
    await until(() => sqs.deleted.includes(good), 'the good message deleted');
    await until(() => (sqs.messages.find((m) => m.messageId === bad)?.receives ?? 0) >= 2, 'the bad message received again');
    assert.deepEqual(sqs.deleted, [good]);
  });

  test('the region comes from AWS_REGION, else from an AWS queue URL, else us-east-1', () => {
    assert.equal(sqsRegionOf('https://sqs.eu-west-3.amazonaws.com/1/q', { AWS_REGION: 'ap-south-1' }), 'ap-south-1');
    assert.equal(sqsRegionOf('https://sqs.eu-west-3.amazonaws.com/1/q', {}), 'eu-west-3');
    assert.equal(sqsRegionOf('http://127.0.0.1:9324/000000000000/q', {}), 'us-east-1');
  });
});
