// What the watch does with an announced object, against a real Redis and the S3 protocol (s3rver):
// it becomes the same document and jobs as `scriptorium enqueue s3://bucket/key`, and never takes
// another key that begins with its own; repeated events and the pipeline's own output add nothing; bad
// documents and objects deleted since their event are recorded as enqueue records rejected inputs; a
// failed enqueue rejects so that the event is delivered again.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { rejectedInputKey } from '../../src/jobs/storage-layout.js';
import { NoRoomError, QueueCapacity } from '../../src/queue/queue-capacity.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { DEFAULT_REMEMBER_SECONDS } from '../../src/watch/recent-uploads.js';
import { S3EventEnqueuer } from '../../src/watch/s3-event-enqueuer.js';
import { S3NotificationError } from '../../src/watch/s3-notifications.js';
import { FlakyStorage } from '../support/flaky-storage.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { createdNotification } from '../support/s3-notifications.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const logger = pino({ level: 'silent' });

describe('the watch enqueuer', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let inbox: S3Storage;
  let work: string;
  let storage: FlakyStorage;
  let documents: Queue;
  let pdf: Buffer;
  const open: S3EventEnqueuer[] = [];

  const enqueuerFor = (target: Storage) => {
    const enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage: target }, redisUrl: redis.url, logger });
    open.push(enqueuer);
    return enqueuer;
  };
  const jobCount = async () => Object.values(await documents.getJobCounts()).reduce((sum, n) => sum + n, 0);

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['inbox', 'scriptorium'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    inbox = openStorage('s3://inbox') as S3Storage;
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-watch-enqueuer-'));
    documents = new Queue(DOCUMENTS.name, { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
    pdf = await makePdf([LETTER], 2);
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FlakyStorage(await mkdtemp(path.join(work, 'storage-')));
  });
  after(async () => {
    await Promise.all(open.map((enqueuer) => enqueuer.close()));
    await documents?.close();
    inbox?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(work, { recursive: true, force: true });
  });

  test('a new object becomes the document and jobs that `enqueue s3://bucket/key` makes', async () => {
    await inbox.put('scans/report 1+2.pdf', pdf);
    const outcomes = await enqueuerFor(storage).enqueueNotification(createdNotification('inbox', [{ key: 'scans/report 1+2.pdf', eTag: '"e1"' }]));
    const docId = documentId(pdf, OCR);
    assert.deepEqual(outcomes, [{ bucket: 'inbox', key: 'scans/report 1+2.pdf', state: 'enqueued', docId }]);
    assert.equal((await documents.getJob(docId))?.data.sourceUri, 's3://inbox/scans/report 1+2.pdf');

    const again = await enqueueDocuments(['s3://inbox/scans/report 1+2.pdf'], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });
    assert.deepEqual(
      again.queued.map(({ state, uri, docId }) => ({ state, uri, docId })),
      [{ state: 'already-queued', uri: 's3://inbox/scans/report 1+2.pdf', docId }],
    );
  });

  test('a key that begins other keys enqueues its own object alone', async () => {
    await inbox.put('scan.pdf', pdf);
    await inbox.put('scan.pdf.png', await makePng());
    const outcomes = await enqueuerFor(storage).enqueueNotification(createdNotification('inbox', [{ key: 'scan.pdf', eTag: '"e2"' }]));
    assert.deepEqual(outcomes.map((o) => [o.key, o.state, o.docId]), [['scan.pdf', 'enqueued', documentId(pdf, OCR)]]);
    assert.equal(await jobCount(), 1);
  });

  test('the same upload delivered again is skipped, also by a watch started later', async () => {
    await inbox.put('twice.pdf', pdf);
    const notification = createdNotification('inbox', [{ key: 'twice.pdf', eTag: '"e3"' }]);
    const first = enqueuerFor(storage);
    assert.equal((await first.enqueueNotification(notification))[0].state, 'enqueued');
    assert.equal((await first.enqueueNotification(notification))[0].state, 'duplicate');
    assert.equal((await enqueuerFor(storage).enqueueNotification(notification))[0].state, 'duplicate');
  });

  test('an upload is remembered for a limited time', async () => {
    await inbox.put('remembered.pdf', pdf);
    await enqueuerFor(storage).enqueueNotification(createdNotification('inbox', [{ key: 'remembered.pdf', eTag: '"e4"' }]));
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('scriptorium:watch:seen:*');
      assert.equal(keys.length, 1);
      const ttl = await client.ttl(keys[0]);
      assert.ok(ttl > 0 && ttl <= DEFAULT_REMEMBER_SECONDS, `ttl ${ttl}`);
    } finally {
      client.disconnect();
    }
  });

  test('a new upload to the same key is read again', async () => {
    const enqueuer = enqueuerFor(storage);
    await inbox.put('replaced.pdf', pdf);
    const [first] = await enqueuer.enqueueNotification(createdNotification('inbox', [{ key: 'replaced.pdf', eTag: '"v1"' }]));
    const png = await makePng();
    await inbox.put('replaced.pdf', png);
    const [second] = await enqueuer.enqueueNotification(createdNotification('inbox', [{ key: 'replaced.pdf', eTag: '"v2"' }]));
    assert.deepEqual([first.state, second.state], ['enqueued', 'enqueued']);
    assert.deepEqual([first.docId, second.docId], [documentId(pdf, OCR), documentId(png, OCR)]);
  });

  test("the pipeline's own output in the watched bucket starts nothing", async () => {
    const scriptorium = openStorage('s3://scriptorium') as S3Storage;
    try {
      const keys = ['staging/0123/source.pdf', 'results/0123/document.md', 'results/0123/_DONE', 'rejected/0123.json'];
      for (const key of keys) await scriptorium.put(key, pdf);
      const outcomes = await enqueuerFor(scriptorium).enqueueNotification(createdNotification('scriptorium', keys.map((key) => ({ key, eTag: `"${key}"` }))));
      assert.deepEqual(outcomes.map((o) => o.state), ['pipeline-output', 'pipeline-output', 'pipeline-output', 'pipeline-output']);
      assert.equal(await jobCount(), 0);
    } finally {
      scriptorium.destroy();
    }
  });

  test('an object that is no document is rejected and recorded where enqueue records it', async () => {
    await inbox.put('notes.txt', Buffer.from('meeting notes, not a document\n'));
    const [outcome] = await enqueuerFor(storage).enqueueNotification(createdNotification('inbox', [{ key: 'notes.txt', eTag: '"e5"' }]));
    assert.equal(outcome.state, 'rejected');
    assert.match(outcome.reason ?? '', /text\/plain content is not a supported document/);
    const record = JSON.parse((await storage.get(rejectedInputKey('s3://inbox/notes.txt'))).toString());
    assert.deepEqual({ uri: record.uri, reason: record.reason }, { uri: 's3://inbox/notes.txt', reason: outcome.reason });
    assert.equal(await jobCount(), 0);
  });

  test('an object deleted since its event is rejected as not found, and the key after it is not taken instead', async () => {
    await inbox.put('deleted.pdf.png', await makePng());
    const [outcome] = await enqueuerFor(storage).enqueueNotification(createdNotification('inbox', [{ key: 'deleted.pdf', eTag: '"e6"' }]));
    assert.deepEqual(outcome, { bucket: 'inbox', key: 'deleted.pdf', state: 'rejected', reason: 'object not found: s3://inbox/deleted.pdf' });
    assert.equal(await jobCount(), 0);
    const record = JSON.parse((await storage.get(rejectedInputKey('s3://inbox/deleted.pdf'))).toString());
    assert.equal(record.reason, 'object not found: s3://inbox/deleted.pdf');
  });

  test('a failed enqueue rejects, is not remembered, and succeeds when delivered again', async () => {
    await inbox.put('retried.pdf', pdf);
    const notification = createdNotification('inbox', [{ key: 'retried.pdf', eTag: '"e7"' }]);
    const enqueuer = enqueuerFor(storage);
    storage.failing = true;
    await assert.rejects(enqueuer.enqueueNotification(notification), /storage backend is unreachable/);
    assert.equal(await jobCount(), 0);
    storage.failing = false;
    assert.equal((await enqueuer.enqueueNotification(notification))[0].state, 'enqueued');
  });

  test('a document without room in its page queue rejects, so its event comes again, and is queued once there is room', async () => {
    const capacity = new QueueCapacity(redis.url, 1);
    const enqueuer = new S3EventEnqueuer({ enqueue: { ocr: OCR, storage }, redisUrl: redis.url, logger, capacity });
    open.push(enqueuer);
    try {
      await inbox.put('first.pdf', pdf);
      await inbox.put('second.pdf', await makePdf([LETTER], 3));
      const first = createdNotification('inbox', [{ key: 'first.pdf', eTag: '"f1"' }]);
      const second = createdNotification('inbox', [{ key: 'second.pdf', eTag: '"s1"' }]);
      assert.equal((await enqueuer.enqueueNotification(first))[0].state, 'enqueued');
      await assert.rejects(enqueuer.enqueueNotification(second), (error: NoRoomError) => {
        assert.ok(error instanceof NoRoomError);
        assert.match(error.message, /^no room for s3:\/\/inbox\/second\.pdf: the queue is full/);
        return true;
      });
      assert.equal(await jobCount(), 1, 'nothing of the second document queued');
      await redis.flush(); // the first document's page read and gone
      assert.equal((await enqueuer.enqueueNotification(second))[0].state, 'enqueued');
    } finally {
      await capacity.close();
    }
  });

  test('a body that is no notification throws S3NotificationError', async () => {
    await assert.rejects(enqueuerFor(storage).enqueueNotification('{"not":"an event"}'), S3NotificationError);
  });
});
