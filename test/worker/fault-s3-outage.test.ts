// Fault: the S3 storage is unreachable (s3rver stopped). Page jobs fail their tries with a clear
// reason and are retried with backoff; when the server comes back on the same port with the same
// objects they complete, and when it stays down they end as failed after the configured tries.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions, PageJobData } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { waitUntil } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

describe('S3 unavailable for a while', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let storage: S3Storage;
  let root: string;
  let model: string;
  let pages: Queue<PageJobData>;
  let workers: OcrWorkers | undefined;
  let documents = 0;

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['scriptorium'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    storage = openStorage('s3://scriptorium/outage') as S3Storage;
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fault-s3-'));
    model = await tinyCheckpoint('v3');
    pages = new Queue(pageQueue('v3').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v3').prefix });
  });
  after(async () => {
    await workers?.close();
    await pages?.close();
    storage?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await workers?.close();
    workers = undefined;
    await redis.flush();
  });

  /** Stages and queues a 2-page PDF while S3 is up. */
  async function enqueuePdf(attempts: number, backoffMs: number): Promise<string> {
    const input = path.join(root, `doc-${++documents}.pdf`);
    await writeFile(input, await makePdf([LETTER, LETTER], documents + 2));
    const summary = await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client'), attempts, backoffMs });
    return summary.queued[0].docId;
  }

  async function startWorkers(): Promise<void> {
    workers = await startOcrWorkers({ model: { dir: model, synthetic: true }, checkpointId: 'sha256:tiny-v3', threads: 1, storage, redisUrl: redis.url, logger: pino({ level: 'silent' }) });
  }

  const failedTries = async (docId: string) => (await Promise.all([1, 2].map((page) => pages.getJob(`${docId}.p${page}-${page}`)))).map((job) => job?.attemptsMade ?? 0);

  test('pages whose storage is down are retried with backoff and complete once it is back', async () => {
    const docId = await enqueuePdf(8, 300);
    await s3.stop();
    try {
      await startWorkers();
      await waitUntil(async () => (await failedTries(docId)).every((tries) => tries >= 1), 30_000, 'a failed try of each page');
    } finally {
      await s3.start();
    }
    await waitUntil(() => storage.exists(`results/${docId}/_DONE`), 60_000, 'the document done');
    const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
    assert.deepEqual(document.pages.map(({ page }) => page), [1, 2]);
    assert.deepEqual(document.failedPages, []);
    for (const page of [1, 2]) {
      const json = JSON.parse((await storage.get(`results/${docId}/pages/000${page}.json`)).toString()) as PageResultJson;
      assert.ok(json.worker.attempt >= 2, `page ${page} was read on try ${json.worker.attempt}`);
    }
  });

  test('pages whose storage stays down fail after the configured tries, saying the storage is unreachable', async () => {
    const docId = await enqueuePdf(3, 100);
    await s3.stop();
    try {
      await startWorkers();
      await waitUntil(
        async () => (await Promise.all([1, 2].map(async (page) => (await pages.getJob(`${docId}.p${page}-${page}`))?.getState()))).every((state) => state === 'failed'),
        30_000,
        'both pages failed',
      );
      for (const page of [1, 2]) {
        const job = await pages.getJob(`${docId}.p${page}-${page}`);
        assert.equal(job?.attemptsMade, 3);
        assert.match(job?.failedReason ?? '', /^get "staging\/[0-9a-f]+\/source\.pdf" in s3:\/\/scriptorium\/outage failed after \d attempts: http:\/\/127\.0\.0\.1:\d+ is unreachable/);
        assert.match(job?.failedReason ?? '', /ECONNREFUSED/);
      }
    } finally {
      await workers?.close();
      workers = undefined;
      await s3.start();
    }
  });
});
