// Pages are routed by variant: a document's page jobs go to its variant's page queue, and a worker
// takes jobs only from the queue of its model's variant, so a V1 worker and a V3 worker serve one
// Redis side by side and neither ever claims (and fails) the other's pages.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue, type Worker } from 'bullmq';
import { pino } from 'pino';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { OcrJobOptions, PageJobData, PageOutcome } from '../../src/jobs/job-types.js';
import type { PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { pageJobId } from '../../src/queue/job-ids.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { startPageWorker } from '../../src/worker/page-worker.js';
import { makePng } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const V1: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', maxNewTokens: 4 };
const V3: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', maxNewTokens: 4 };
const logger = pino({ level: 'silent' });

/** Remembers the job ids it was given. */
class RecordingPipeline extends PagePipeline {
  readonly jobIds: string[] = [];

  override processPage(job: PageJob, deadline?: AbortSignal): Promise<PageOutcome> {
    this.jobIds.push(job.jobId ?? '');
    return super.processPage(job, deadline);
  }
}

describe('pages routed by variant', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let storage: FileStorage;
  let input: string;
  const engines = new Map<Variant, OcrEngine>();
  let running: Worker[] = [];

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-variant-routing-'));
    storage = new FileStorage(path.join(root, 'storage'));
    input = path.join(root, 'scan.png');
    await writeFile(input, await makePng());
    for (const variant of ['v1', 'v3'] as const) engines.set(variant, await OcrEngine.load(await tinyCheckpoint(variant), { threads: 1 }));
  });
  after(() => rm(root, { recursive: true, force: true }));

  /** A page worker of `variant` and a document worker, as one `scriptorium work` process runs them. */
  function startWorkers(variant: Variant): RecordingPipeline {
    const pipeline = new RecordingPipeline({ engine: engines.get(variant)!, storage, logger, host: 'test-host', checkpointId: `sha256:tiny-${variant}`, synthetic: true });
    const connection = redisOptions(redis.url, 'worker');
    running.push(startPageWorker({ pipeline, connection, logger }), startDocumentWorker({ storage, connection, logger }));
    return pipeline;
  }

  async function enqueue(ocr: OcrJobOptions): Promise<string> {
    const summary = await enqueueDocuments([input], { ocr, storage, connection: redisOptions(redis.url, 'client') });
    return summary.queued[0].docId;
  }

  async function pageJson(docId: string): Promise<PageResultJson> {
    return JSON.parse((await storage.get(`results/${docId}/pages/0001.json`)).toString()) as PageResultJson;
  }

  test('a V1 worker reads only V1 pages; the V3 page waits untried until a V3 worker reads it', async () => {
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    const v3Pages = new Queue<PageJobData>(pageQueue('v3').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v3').prefix });
    try {
      const v1Reader = startWorkers('v1');
      const [v1Doc, v3Doc] = [await enqueue(V1), await enqueue(V3)];
      assert.notEqual(v1Doc, v3Doc);

      const [v1Settled] = await watcher.waitFor([v1Doc]);
      assert.equal(v1Settled.status, 'completed');
      assert.deepEqual(v1Reader.jobIds, [pageJobId(v1Doc, 1, 1)]);
      const waiting = await v3Pages.getJob(pageJobId(v3Doc, 1, 1));
      assert.deepEqual({ state: await waiting?.getState(), attemptsMade: waiting?.attemptsMade }, { state: 'prioritized', attemptsMade: 0 });

      const v3Reader = startWorkers('v3');
      const [v3Settled] = await watcher.waitFor([v3Doc]);
      assert.equal(v3Settled.status, 'completed');
      assert.deepEqual(v3Settled.status === 'completed' && v3Settled.returnvalue.failedPages, []);
      assert.deepEqual(v3Reader.jobIds, [pageJobId(v3Doc, 1, 1)]);
      assert.deepEqual(v1Reader.jobIds, [pageJobId(v1Doc, 1, 1)]);
      assert.deepEqual([(await pageJson(v1Doc)).model.variant, (await pageJson(v3Doc)).model.variant], ['v1', 'v3']);
    } finally {
      // Before the suite's Redis stops: a worker closing without it would wait for it forever.
      await Promise.all(running.map((worker) => worker.close()));
      running = [];
      await v3Pages.close();
      await watcher.close();
    }
  });
});
