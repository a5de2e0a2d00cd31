// The pipeline end to end against a real Redis and the S3 protocol (s3rver in-process): an archive
// holding a 3-page PDF, a PNG, a 2-page TIFF, a corrupt PDF, an encrypted PDF and a text file is
// enqueued; two workers read it; every good page has a result with every stage timed, each bad
// document has its reason, the documents are assembled, and a second enqueue adds no jobs.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions, Stage } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments, type EnqueueSummary } from '../../src/producer/enqueue.js';
import { rejectedInputKey } from '../../src/jobs/storage-layout.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { zipArchive } from '../support/make-archives.js';
import { LETTER, makeCorruptPdf, makeEncryptedPdf, makePdf, makePng, makeTwoPageTiff } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const STAGES: Stage[] = ['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'];
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

describe('pipeline end to end on Redis and S3', { skip: REDIS_SERVER_MISSING }, () => {
  // Started and stopped here rather than by useTestRedis: the workers must close before Redis stops.
  let redis: EmbeddedRedis;
  let s3: S3Server;
  let storage: S3Storage;
  let work: string;
  let archive: string;
  let first: EnqueueSummary;
  let workers: OcrWorkers[] = [];

  const enqueue = () => enqueueDocuments([archive], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });

  async function waitForDone(docIds: string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const done = await Promise.all(docIds.map((id) => storage.exists(`results/${id}/_DONE`)));
      if (done.every(Boolean)) return;
      if (Date.now() > deadline) throw new Error(`documents not done after ${timeoutMs} ms: ${docIds.filter((_, i) => !done[i])}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  before(async () => {
    redis = await startEmbeddedRedis();
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['scriptorium'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    storage = openStorage('s3://scriptorium/e2e') as S3Storage;
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-e2e-'));
    archive = path.join(work, 'batch.zip');
    await writeFile(
      archive,
      zipArchive([
        { name: 'report.pdf', data: await makePdf([LETTER, LETTER, LETTER], 3) },
        { name: 'scans/scan.png', data: await makePng() },
        { name: 'scans/two-pages.tiff', data: await makeTwoPageTiff() },
        { name: 'damaged.pdf', data: makeCorruptPdf() },
        { name: 'locked.pdf', data: makeEncryptedPdf('secret') },
        { name: 'notes.txt', data: Buffer.from('meeting notes, not a document\n') },
      ]),
    );
    first = await enqueue();
    const model = { dir: await tinyCheckpoint('v1'), synthetic: true };
    workers = await Promise.all(
      [0, 1].map(() => startOcrWorkers({ model, checkpointId: 'sha256:tiny-v1', threads: 1, storage, redisUrl: redis.url, batch: 2, concurrency: 2, logger: silent })),
    );
    await waitForDone(first.queued.map((q) => q.docId), 180_000);
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.close()));
    storage?.destroy();
    await s3?.close();
    await redis?.close();
    delete process.env.S3_ENDPOINT;
    await rm(work, { recursive: true, force: true });
  });

  test('the three good documents (6 pages) are queued and the three bad ones rejected with reasons', () => {
    assert.equal(first.documents, 3);
    assert.equal(first.pages, 6);
    const reasons = Object.fromEntries(first.rejected.map((r) => [r.uri.split('!')[1], r.reason]));
    assert.match(reasons['damaged.pdf'], /corrupt PDF/);
    assert.match(reasons['locked.pdf'], /encrypted PDF: a password is required/);
    assert.match(reasons['notes.txt'], /text\/plain content is not a supported document/);
  });

  test('each rejected input has its reason recorded in storage', async () => {
    for (const rejected of first.rejected) {
      const record = JSON.parse((await storage.get(rejectedInputKey(rejected.uri))).toString());
      assert.deepEqual({ uri: record.uri, reason: record.reason }, { uri: rejected.uri, reason: rejected.reason });
    }
  });

  test('every good page has a result with every stage timed', async () => {
    for (const queued of first.queued) {
      for (let page = 1; page <= queued.pages; page++) {
        const json = JSON.parse((await storage.get(`results/${queued.docId}/pages/${String(page).padStart(4, '0')}.json`)).toString()) as PageResultJson;
        assert.equal(json.source.page, page);
        for (const stage of STAGES) assert.ok(json.timings_ms[stage] >= 0, `${queued.uri} page ${page}: ${stage}`);
      }
    }
  });

  test('each document is assembled with all its pages and no failures', async () => {
    for (const queued of first.queued) {
      const document = JSON.parse((await storage.get(`results/${queued.docId}/document.json`)).toString()) as DocumentResultJson;
      assert.equal(document.pages.length, queued.pages, queued.uri);
      assert.deepEqual(document.failedPages, []);
      assert.ok((await storage.get(`results/${queued.docId}/document.md`)).length > 0);
    }
  });

  test('enqueueing the same archive again adds no jobs', async () => {
    const pages = new Queue(pageQueue('v1').name, { prefix: pageQueue('v1').prefix, connection: redisOptions(redis.url, 'client') });
    try {
      const before = await pages.getJobCounts();
      const again = await enqueue();
      assert.equal(again.documents, 0);
      assert.equal(again.pages, 0);
      assert.equal(again.skippedDone, 3);
      assert.deepEqual(await pages.getJobCounts(), before);
    } finally {
      await pages.close();
    }
  });
});
