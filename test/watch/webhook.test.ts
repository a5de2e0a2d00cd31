// The webhook source over real HTTP, a real Redis and the S3 protocol (s3rver): requests without valid
// auth are refused with 401 and enqueue nothing; a bearer token (MinIO's auth_token) or an HMAC-SHA256
// signature of the body is accepted, and the answer comes once the documents are enqueued.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
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
import { startWebhookSource, type WebhookSource } from '../../src/watch/webhook-source.js';
import { FlakyStorage } from '../support/flaky-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { createdNotification, encodeS3EventKey, eventRecord } from '../support/s3-notifications.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const SECRET = 'correct horse battery staple';
const MAX_BODY_BYTES = 64 * 1024;
const logger = pino({ level: 'silent' });

const signature = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('the webhook source', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let inbox: S3Storage;
  let work: string;
  let storage: FlakyStorage;
  let documents: Queue;
  let enqueuer: S3EventEnqueuer;
  let webhook: WebhookSource;
  let pdf: Buffer;
  let docId: string;
  /** The body MinIO's webhook target sends for an upload of inbox/scans/a b.pdf. */
  let minioBody: string;

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${webhook.url}/events`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });
  const jobCount = async () => Object.values(await documents.getJobCounts()).reduce((sum, n) => sum + n, 0);

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['inbox'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    inbox = openStorage('s3://inbox') as S3Storage;
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-watch-webhook-'));
    documents = new Queue(DOCUMENTS.name, { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
    pdf = await makePdf([LETTER], 2);
    docId = documentId(pdf, OCR);
    await inbox.put('scans/a b.pdf', pdf);
    const record = eventRecord('s3:ObjectCreated:Put', { bucket: 'inbox', key: encodeS3EventKey('scans/a b.pdf'), eTag: 'e1' });
    minioBody = JSON.stringify({ EventName: 's3:ObjectCreated:Put', Key: 'inbox/scans/a b.pdf', Records: [record] });
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FlakyStorage(await mkdtemp(path.join(work, 'storage-')));
    enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage }, redisUrl: redis.url, logger });
    webhook = await startWebhookSource({ port: 0, secret: SECRET, enqueuer, logger, maxBodyBytes: MAX_BODY_BYTES });
  });
  afterEach(async () => {
    await webhook.close();
    await enqueuer.close();
  });
  after(async () => {
    await documents?.close();
    inbox?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(work, { recursive: true, force: true });
  });

  test('no Authorization: 401 and nothing enqueued', async () => {
    const response = await post(minioBody);
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer');
    assert.equal(await jobCount(), 0);
  });

  test('a wrong bearer token: 401 and nothing enqueued', async () => {
    for (const authorization of [`Bearer ${SECRET}x`, 'Bearer correct', `Basic ${Buffer.from(`user:${SECRET}`).toString('base64')}`, SECRET]) {
      assert.equal((await post(minioBody, { Authorization: authorization })).status, 401, authorization);
    }
    assert.equal(await jobCount(), 0);
  });

  test('a signature made with another secret, or over another body: 401 and nothing enqueued', async () => {
    assert.equal((await post(minioBody, { 'X-Scriptorium-Signature': signature(minioBody, 'another secret') })).status, 401);
    assert.equal((await post(minioBody, { 'X-Scriptorium-Signature': signature(`${minioBody} `) })).status, 401);
    assert.equal((await post(minioBody, { 'X-Scriptorium-Signature': signature(minioBody).replace('sha256=', '') })).status, 401);
    assert.equal(await jobCount(), 0);
  });

  test("MinIO's bearer token: 200 once the document is enqueued", async () => {
    const response = await post(minioBody, { Authorization: `Bearer ${SECRET}` });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { documents: [{ bucket: 'inbox', key: 'scans/a b.pdf', state: 'enqueued', docId }] });
    assert.notEqual(await documents.getJob(docId), undefined);
  });

  test('an HMAC-SHA256 signature of the body: 200 once the document is enqueued', async () => {
    const body = createdNotification('inbox', [{ key: 'scans/a b.pdf', eTag: '"e2"' }]);
    const response = await post(body, { 'X-Scriptorium-Signature': signature(body) });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { documents: Array<{ docId: string }> }).documents[0].docId, docId);
    assert.notEqual(await documents.getJob(docId), undefined);
  });

  test('an authenticated body that is not JSON, or no notification: 400', async () => {
    for (const body of ['{"Records": [', '{"hello": "world"}']) {
      const response = await post(body, { Authorization: `Bearer ${SECRET}` });
      assert.equal(response.status, 400, body);
      assert.match(((await response.json()) as { error: string }).error, /not JSON|not an S3 event notification/);
    }
    assert.equal(await jobCount(), 0);
  });

  test('a body over the limit: 413 and nothing enqueued', async () => {
    const body = JSON.stringify({ Records: [], padding: 'x'.repeat(MAX_BODY_BYTES) });
    const response = await post(body, { 'X-Scriptorium-Signature': signature(body) });
    assert.equal(response.status, 413);
    assert.equal(await jobCount(), 0);
  });

  test('enqueueing fails: 503, so that the sender retries; the retry is enqueued', async () => {
    storage.failing = true;
    assert.equal((await post(minioBody, { Authorization: `Bearer ${SECRET}` })).status, 503);
    assert.equal(await jobCount(), 0);
    storage.failing = false;
    assert.equal((await post(minioBody, { Authorization: `Bearer ${SECRET}` })).status, 200);
    assert.notEqual(await documents.getJob(docId), undefined);
  });

  test('GET /healthz answers 200; HEAD /events answers 200 for senders that probe the endpoint', async () => {
    assert.equal((await fetch(`${webhook.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${webhook.url}/events`, { method: 'HEAD' })).status, 200);
  });

  test('other paths and methods are refused', async () => {
    assert.equal((await fetch(`${webhook.url}/elsewhere`, { method: 'POST', body: minioBody, headers: { Authorization: `Bearer ${SECRET}` } })).status, 404);
    assert.equal((await fetch(`${webhook.url}/events`)).status, 405);
    assert.equal(await jobCount(), 0);
  });

  test('a webhook without a secret does not start', async () => {
    await assert.rejects(startWebhookSource({ port: 0, secret: '', enqueuer, logger }), /needs a secret/);
  });
});
