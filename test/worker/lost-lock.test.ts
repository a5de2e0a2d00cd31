// A lost lock is not a crash: a worker whose event loop stalls past its lock duration loses the
// page's lock while alive, another worker takes the page over, and the page still ends done, not
// given up as poison, even with a poison limit of zero deaths. The claims count deaths only.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';
import { pino } from 'pino';

import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { OcrJobOptions, PageOutcome } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { LiveWorkerHeartbeat } from '../../src/queue/live-workers.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { startPageWorker } from '../../src/worker/page-worker.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING, useTestRedis } from '../support/redis-server.js';
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
      const until = Date.now() + this.stallMs;
      while (Date.now() < until);
    }
    return super.processPage(job, deadline);
  }
}

describe('a worker that loses its lock while alive', { skip: REDIS_SERVER_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-lost-lock-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('does not count towards the poison limit: the page ends done', async () => {
    const storage = new FileStorage(path.join(root, 'storage'));
    const engine = await OcrEngine.load(await tinyCheckpoint('v1'), { threads: 1 });
    const logger = pino({ level: 'silent' });
    const reader = { engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true };
    const input = path.join(root, 'one-page.pdf');
    await writeFile(input, await makePdf([LETTER], 3));

    const client = new Redis(redis.url);
    const identity = { host: 'test-host', backend: 'cpu', threads: 1, variant: 'v1', checkpoint: 'sha256:tiny-v1', startedAt: Date.now() };
    const progress = () => ({ currentJobs: [], pagesDone: 0, pagesFailed: 0 });
    const [stallingBeat, healthyBeat] = await Promise.all([
      LiveWorkerHeartbeat.start(client, { ...identity, pid: 1 }, progress, { intervalMs: 200 }),
      LiveWorkerHeartbeat.start(client, { ...identity, pid: 2 }, progress, { intervalMs: 200 }),
    ]);
    const connection = redisOptions(redis.url, 'worker');
    const faults = { lockDurationMs: LOCK_DURATION_MS, stalledIntervalMs: 300, maxStalledCount: 0 };
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
      await Promise.all([stallingBeat.stop(), healthyBeat.stop()]);
      client.disconnect();
    }
  });
});
