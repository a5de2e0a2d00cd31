// The page and document workers against a real Redis, on a tiny V1 checkpoint and file:// storage:
// claimed page jobs are read side by side, failed pages end up in document.json with their reasons, and a
// closing worker finishes the jobs it holds.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue, type Worker } from 'bullmq';
import { pino } from 'pino';

import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { DonePageOutcome, OcrJobOptions, PageJobData, PageOutcome } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { pageAttemptsFolder } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments, type EnqueueSummary } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { StorageError } from '../../src/storage/storage-error.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { startPageWorker, type PageWorkerOptions } from '../../src/worker/page-worker.js';
import { LETTER, makeCorruptPdf, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

/** Small pages in tiny mode, 8 tokens: a page in well under a second. */
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };
const logger = pino({ level: 'silent' });

/** file:// storage whose writes of keys starting with the chosen prefixes fail as an unreachable backend would. */
class FlakyStorage extends FileStorage {
  readonly failingPrefixes = new Set<string>();

  override put(key: string, body: Parameters<FileStorage['put']>[1]): Promise<void> {
    if ([...this.failingPrefixes].some((prefix) => key.startsWith(prefix))) return Promise.reject(new StorageError('transient', `put ${key}: the storage backend is unreachable`, { key }));
    return super.put(key, body);
  }
}

/** Records the jobs read and how many were in flight at once; `beforeRead` may answer for a job instead. */
class RecordingPipeline extends PagePipeline {
  readonly jobsRead: string[] = [];
  inFlight = 0;
  mostInFlight = 0;
  beforeRead: (job: PageJob) => PageOutcome | undefined = () => undefined;

  override async processPage(job: PageJob, deadline?: AbortSignal): Promise<PageOutcome> {
    const answer = this.beforeRead(job);
    if (answer !== undefined) return answer;
    this.jobsRead.push(job.jobId ?? '');
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    try {
      return await super.processPage(job, deadline);
    } finally {
      this.inFlight -= 1;
    }
  }
}

describe('page and document workers', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let engine: OcrEngine;
  let storage: FlakyStorage;
  let pipeline: RecordingPipeline;
  let pages: Queue<PageJobData>;
  let running: Worker[] = [];

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-queue-workers-'));
    engine = await OcrEngine.load(await tinyCheckpoint('v1'), { threads: 2 });
    pages = new Queue(pageQueue('v1').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v1').prefix });
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FlakyStorage(await mkdtemp(path.join(root, 'storage-')));
    pipeline = new RecordingPipeline({ engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true });
  });
  after(async () => {
    await pages.close();
    await rm(root, { recursive: true, force: true });
  });

  async function stopWorkers(): Promise<void> {
    await Promise.all(running.map((worker) => worker.close()));
    running = [];
  }

  function startWorkers(options: Partial<PageWorkerOptions> = {}): void {
    const connection = redisOptions(redis.url, 'worker');
    running.push(startPageWorker({ pipeline, connection, logger, ...options }), startDocumentWorker({ storage, connection, logger }));
  }

  async function enqueuePdf(pageCount: number, attempts = 3, backoffMs = 10): Promise<EnqueueSummary> {
    const input = path.join(root, `${pageCount}-pages-${Math.random().toString(36).slice(2)}.pdf`);
    await writeFile(input, await makePdf(Array.from({ length: pageCount }, () => LETTER), pageCount + 1));
    return enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client'), attempts, backoffMs });
  }

  /** Enqueues with `enqueue`, runs `start`, and resolves with the document outcomes. */
  async function untilAssembled(enqueue: () => Promise<EnqueueSummary>, start: () => void = () => startWorkers()) {
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    try {
      const summary = await enqueue();
      start();
      const settlements = await watcher.waitFor(summary.queued.map(({ docId }) => docId));
      return { summary, settlements };
    } finally {
      await watcher.close();
      await stopWorkers();
    }
  }

  async function documentJson(storageOf: Storage, docId: string): Promise<DocumentResultJson> {
    return JSON.parse((await storageOf.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
  }

  test('page jobs held at once are read concurrently, so their decodes share steps', async () => {
    const { settlements } = await untilAssembled(() => enqueuePdf(4), () => startWorkers({ concurrency: 8 }));
    assert.equal(settlements[0].status, 'completed');
    assert.equal(pipeline.jobsRead.length, 4);
    assert.ok(pipeline.mostInFlight >= 2, `at most ${pipeline.mostInFlight} page read at a time`);
  });

  test('a page job returns the keys of its results and its stage timings', async () => {
    const { summary } = await untilAssembled(() => enqueuePdf(1));
    const { docId } = summary.queued[0];
    const job = await pages.getJob(`${docId}.p1-1`);
    const outcome = job?.returnvalue as DonePageOutcome;
    assert.equal(outcome.status, 'done');
    assert.deepEqual(outcome.pages.map(({ page, key, markdownKey }) => ({ page, key, markdownKey })), [
      { page: 1, key: `results/${docId}/pages/0001.json`, markdownKey: `results/${docId}/pages/0001.md` },
    ]);
    assert.ok(outcome.pages[0].timings_ms.total > 0);
  });

  test('the document job returns where its results are, which pages failed and which are flagged', async () => {
    const { summary, settlements } = await untilAssembled(() => enqueuePdf(2));
    const { docId } = summary.queued[0];
    // As document.json lists them: the random weights run every page to its token budget.
    const { flagged } = await documentJson(storage, docId);
    assert.ok(flagged?.length === 2 && flagged.every(({ flags }) => flags.includes('max_tokens')), JSON.stringify(flagged));
    assert.deepEqual(settlements, [
      {
        docId,
        status: 'completed',
        returnvalue: { docId, markdown: `results/${docId}/document.md`, json: `results/${docId}/document.json`, pages: 2, failedPages: [], flagged },
      },
    ]);
    assert.equal(await storage.exists(`results/${docId}/_DONE`), true);
  });

  test('a page that fails on every try is a failed page in document.json, and the document is still assembled', async () => {
    const { summary, settlements } = await untilAssembled(async () => {
      const enqueued = await enqueuePdf(2, 3);
      storage.failingPrefixes.add(`${pageAttemptsFolder(enqueued.queued[0].docId)}0002-`);
      return enqueued;
    });
    const { docId } = summary.queued[0];
    assert.equal(settlements[0].status, 'completed');
    const document = await documentJson(storage, docId);
    assert.deepEqual(document.pages.map(({ page }) => page), [1]);
    assert.equal(document.failedPages.length, 1);
    assert.equal(document.failedPages[0].page, 2);
    assert.match(document.failedPages[0].reason, new RegExp(`^put ${pageAttemptsFolder(docId)}0002-[0-9a-f-]+\\.md: the storage backend is unreachable$`));
    assert.equal(await storage.exists(`results/${docId}/_DONE`), false, 'no _DONE while a page failed');
    const marker = JSON.parse((await storage.get(`results/${docId}/_FAILED_PAGES`)).toString());
    assert.deepEqual({ failedPages: marker.failedPages, options: marker.options }, { failedPages: document.failedPages, options: OCR });
    const failed = await pages.getJob(`${docId}.p2-2`);
    assert.deepEqual({ state: await failed?.getState(), attemptsMade: failed?.attemptsMade }, { state: 'failed', attemptsMade: 3 });
  });

  test('a retry released early (as a worker whose clock is behind releases it) still waits out its backoff', async () => {
    const BACKOFF_MS = 1_500;
    const tries: number[] = [];
    // BullMQ releases a retry by the clocks of the workers that fail it and fetch it: one whose clock
    // reads a minute behind releases it at once. Here the retry is promoted as soon as the try fails.
    pipeline.beforeRead = (job) => {
      tries.push(performance.now());
      if (tries.length > 1) return undefined;
      return { status: 'failed', docId: job.data.docId, jobId: job.jobId, pages: [1], reason: 'storage unreachable', retryable: true };
    };
    const { settlements } = await untilAssembled(
      () => enqueuePdf(1, 2, BACKOFF_MS),
      () => {
        startWorkers();
        running[0].once('failed', (job) => void job?.promote());
      },
    );
    assert.equal(settlements[0].status, 'completed');
    assert.equal(tries.length, 2);
    assert.ok(tries[1] - tries[0] >= BACKOFF_MS - 50, `the retry started ${(tries[1] - tries[0]).toFixed(0)} ms after the failed try`);
  });

  test('pages whose source cannot be rendered fail at once, without further tries', async () => {
    const { summary } = await untilAssembled(async () => {
      const enqueued = await enqueuePdf(2, 3);
      await storage.put(enqueued.queued[0].keys.source, makeCorruptPdf());
      return enqueued;
    });
    const { docId } = summary.queued[0];
    const document = await documentJson(storage, docId);
    assert.deepEqual(document.failedPages.map(({ page }) => page), [1, 2]);
    assert.match(document.failedPages[0].reason, /^corrupt PDF: /);
    for (const page of [1, 2]) assert.equal((await pages.getJob(`${docId}.p${page}-${page}`))?.attemptsMade, 1);
  });

  test('a finished document whose results were deleted is enqueued and read again', async () => {
    const input = path.join(root, 'read-twice.pdf');
    await writeFile(input, await makePdf([LETTER], 1));
    const enqueue = () => enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });
    const { summary } = await untilAssembled(enqueue);
    const { docId } = summary.queued[0];
    await storage.delete(`results/${docId}/_DONE`);
    const again = await untilAssembled(enqueue);
    assert.equal(again.summary.queued[0].state, 'enqueued');
    assert.equal(again.settlements[0].status, 'completed');
    assert.equal(await storage.exists(`results/${docId}/_DONE`), true);
  });

  test('closing the page worker finishes the job it holds instead of abandoning it', async () => {
    const summary = await enqueuePdf(1);
    const jobId = `${summary.queued[0].docId}.p1-1`;
    const worker = startPageWorker({ pipeline, connection: redisOptions(redis.url, 'worker'), logger });
    await new Promise<void>((resolve) => worker.once('active', () => resolve()));
    await worker.close();
    assert.equal(await (await pages.getJob(jobId))?.getState(), 'completed');
  });

  test('a page job whose data is no page job fails at once, naming what is wrong, without using its other tries', async () => {
    await pages.add('page', { docId: 'not-a-doc-id', firstPage: 1 } as unknown as PageJobData, { jobId: 'hand-made', attempts: 3 });
    const worker = startPageWorker({ pipeline, connection: redisOptions(redis.url, 'worker'), logger });
    try {
      await until(async () => (await (await pages.getJob('hand-made'))?.getState()) === 'failed');
    } finally {
      await worker.close();
    }
    const job = await pages.getJob('hand-made');
    assert.equal(job?.attemptsMade, 1);
    assert.match(job?.failedReason ?? '', /^page job data is invalid: docId: .*; sourceUri: /);
  });

  test('a worker of another storage leaves the job queued, untried, for a worker of its storage', async () => {
    const summary = await enqueuePdf(1);
    const { docId } = summary.queued[0];
    const jobId = `${docId}.p1-1`;
    const elsewhere = new FileStorage(await mkdtemp(path.join(root, 'other-storage-')));
    const foreign = new PagePipeline({ engine, storage: elsewhere, logger, host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true });
    const connection = redisOptions(redis.url, 'worker');
    const wrongWorker = startPageWorker({ pipeline: foreign, connection, logger });
    let state: string | undefined;
    try {
      await until(async () => ['delayed', 'failed', 'completed'].includes((state = await (await pages.getJob(jobId))?.getState()) ?? ''));
    } finally {
      await wrongWorker.close();
    }
    assert.equal(state, 'delayed');
    const job = await pages.getJob(jobId);
    assert.equal(job?.attemptsMade, 0);
    assert.equal(job?.failedReason, undefined);
    assert.equal(await elsewhere.exists(`results/${docId}/pages/0001.json`), false);

    await job?.promote();
    const { settlements } = await untilAssembled(async () => summary);
    assert.equal(settlements[0].status, 'completed');
    assert.deepEqual(settlements[0].status === 'completed' && settlements[0].returnvalue.failedPages, []);
    assert.equal(await storage.exists(`results/${docId}/_DONE`), true);
  });
});

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}
