// A lost lock is not a crash: a worker whose event loop stalls past its lock duration loses the
// page's lock while alive, another worker takes the page over, and the page still ends done, not
// given up as poison, even with a poison limit of zero deaths. The claims count deaths only. And what
// such a worker reads once the page was given up never becomes the page's result.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';
import { pino } from 'pino';

import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { DonePageOutcome, OcrJobOptions, PageOutcome } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { pageAttemptsFolder, pageResultKey } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { LiveWorkerHeartbeat } from '../../src/queue/live-workers.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { startPageWorker } from '../../src/worker/page-worker.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 4 };
const LOCK_DURATION_MS = 1_000;

/** Blocks the event loop for `stallMs` on its first page, as CPU work on the main thread once did. */
class StallingPipeline extends PagePipeline {
  stalled = false;
  constructor(
    options: ConstructorParameters<typeof PagePipeline>[0],
    readonly stallMs: number,
  ) {
    super(options);
  }

  override async processPage(job: PageJob, deadline?: AbortSignal): Promise<PageOutcome> {
    if (!this.stalled) {
      this.stalled = true;
      stallEventLoop(this.stallMs);
    }
    return super.processPage(job, deadline);
  }
}

function stallEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** Stalls its event loop on its page (losing the lock), then reads it only once `release` is called; records its discarded tries. */
class LateReaderPipeline extends PagePipeline {
  release: () => void = () => undefined;
  readonly released = new Promise<void>((resolve) => (this.release = resolve));
  readonly discarded: DonePageOutcome[] = [];
  #discardedOne: () => void = () => undefined;
  readonly discardedOne = new Promise<void>((resolve) => (this.#discardedOne = resolve));

  constructor(
    options: ConstructorParameters<typeof PagePipeline>[0],
    readonly stallMs: number,
  ) {
    super(options);
  }

  override async processPage(job: PageJob, deadline?: AbortSignal): Promise<PageOutcome> {
    stallEventLoop(this.stallMs);
    await this.released;
    return super.processPage(job, deadline);
  }

  override async discard(outcome: DonePageOutcome): Promise<void> {
    await super.discard(outcome);
    this.discarded.push(outcome);
    this.#discardedOne();
  }
}

/** Fails every page for good, as a page whose source cannot be read. */
class FailingPipeline extends PagePipeline {
  override async processPage(job: PageJob): Promise<PageOutcome> {
    return { status: 'failed', docId: job.data.docId, jobId: job.jobId, pages: [job.data.firstPage], reason: 'the source could not be read', retryable: false };
  }
}

describe('a worker that loses its lock while alive', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-lost-lock-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  /**
   * What each test starts from: file storage, a one-page PDF (its own: the first pid seeds it, so no
   * test finds its document already read in Redis), a tiny V1 reader, and two live workers' heartbeats.
   */
  async function setting(name: string, pids: [number, number]) {
    const storage = new FileStorage(path.join(root, name));
    const engine = await OcrEngine.load(await tinyCheckpoint('v1'), { threads: 1 });
    const logger = pino({ level: 'silent' });
    const reader = { engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true };
    const input = path.join(root, `${name}.pdf`);
    await writeFile(input, await makePdf([LETTER], pids[0]));
    const client = new Redis(redis.url);
    const identity = { host: 'test-host', backend: 'cpu', threads: 1, variant: 'v1', checkpoint: 'sha256:tiny-v1', startedAt: Date.now() };
    const progress = () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 });
    const beats = await Promise.all(pids.map((pid) => LiveWorkerHeartbeat.start(client, { ...identity, pid }, progress, { intervalMs: 200 })));
    return {
      storage,
      logger,
      reader,
      input,
      beats,
      connection: redisOptions(redis.url, 'worker'),
      faults: { lockDurationMs: LOCK_DURATION_MS, stalledIntervalMs: 300, maxStalledCount: 0 },
      async close() {
        await Promise.all(beats.map((beat) => beat.stop()));
        client.disconnect();
      },
    };
  }

  test('does not count towards the poison limit: the page ends done', async () => {
    const { storage, logger, reader, input, beats, connection, faults, close } = await setting('one-page', [1, 2]);
    const [stallingBeat, healthyBeat] = beats;
    const stalling = startPageWorker({ pipeline: new StallingPipeline(reader, 3 * LOCK_DURATION_MS), connection, logger, workerKey: stallingBeat.key, ...faults });
    const lostLocks: string[] = [];
    stalling.on('lockRenewalFailed', (jobIds) => lostLocks.push(...jobIds));
    await stalling.waitUntilReady();
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    const workers: Array<{ close(): Promise<void> }> = [stalling];
    try {
      const claimed = once(stalling, 'active');
      const summary = await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });
      // The healthy worker starts once the stalling one holds the page.
      await claimed;
      workers.push(startPageWorker({ pipeline: new PagePipeline(reader), connection, logger, workerKey: healthyBeat.key, ...faults }));
      workers.push(startDocumentWorker({ storage, connection, logger }));
      const [settlement] = await watcher.waitFor(summary.queued.map(({ docId }) => docId));
      assert.equal(settlement.status, 'completed');
      const document = JSON.parse((await storage.get(`results/${summary.queued[0].docId}/document.json`)).toString()) as DocumentResultJson;
      assert.ok(lostLocks.length > 0, 'the stalling worker kept its lock: the test showed nothing');
      assert.deepEqual(document.failedPages, []);
      assert.deepEqual(document.pages.map(({ page }) => page), [1]);
    } finally {
      await Promise.all([...workers.map((worker) => worker.close()), watcher.close()]);
      await close();
    }
  });
  test('stores nothing as the result of a page given up meanwhile, and leaves no try behind', { timeout: 60_000 }, async () => {
    const { storage, logger, reader, input, beats, connection, faults, close } = await setting('late-page', [3, 4]);
    const [lateBeat, failingBeat] = beats;
    const late = new LateReaderPipeline(reader, 3 * LOCK_DURATION_MS);
    // One job at a time: the page, once back in the queue, goes to the other worker.
    const lateWorker = startPageWorker({ pipeline: late, connection, logger, workerKey: lateBeat.key, concurrency: 1, ...faults });
    await lateWorker.waitUntilReady();
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    const workers: Array<{ close(): Promise<void> }> = [lateWorker];
    try {
      const claimed = once(lateWorker, 'active');
      const summary = await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });
      const { docId } = summary.queued[0];
      await claimed;
      // The page, taken over once the late reader's lock is gone, fails for good there, and its document is assembled.
      workers.push(startPageWorker({ pipeline: new FailingPipeline(reader), connection, logger, workerKey: failingBeat.key, ...faults }));
      workers.push(startDocumentWorker({ storage, connection, logger }));
      const [settlement] = await watcher.waitFor([docId]);
      assert.equal(settlement.status, 'completed');
      const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
      assert.deepEqual(document.failedPages, [{ page: 1, reason: 'the source could not be read' }]);

      // Only now does the late reader read the page and store it.
      late.release();
      await late.discardedOne;
      assert.equal(late.discarded.length, 1);
      assert.equal(await storage.exists(pageResultKey(docId, 1, 'json')), false, 'the late try became the result of a page listed failed');
      assert.equal(await storage.exists(pageResultKey(docId, 1, 'md')), false);
      const left = [];
      for await (const { key } of storage.list(pageAttemptsFolder(docId))) left.push(key);
      assert.deepEqual(left, []);
    } finally {
      late.release();
      await Promise.all([...workers.map((worker) => worker.close()), watcher.close()]);
      await close();
    }
  });
});
