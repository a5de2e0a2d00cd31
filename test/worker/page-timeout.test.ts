// The page deadline: generation stops between decode steps once its signal aborts; a page whose decode
// the deadline stops is done with the text it read, flagged 'timeout' (a job not yet decoding fails,
// to be tried again); an engine that never returns fails its page, hands the other held jobs back
// and says so. A page that failed before is read alone on its next try.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { generate } from '../../src/engine/generate.js';
import type { NativeModel } from '../../src/engine/native-model.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { OcrJobOptions, PageJobData, PageOutcome } from '../../src/jobs/job-types.js';
import { documentKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { parsePageResultJson, type DocumentResultJson, type PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { EngineHungError, startPageWorker } from '../../src/worker/page-worker.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { waitUntil } from '../support/worker-processes.js';

/** The docId of the pipeline tests' document. */
const DOC_ID = 'd'.repeat(32);

const logger = pino({ level: 'silent' });
/** Far more tokens than the tests wait for (about 8 ms each on one thread): only a deadline ends them in time. */
const ENDLESS: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8000 };
const QUICK: OcrJobOptions = { ...ENDLESS, maxNewTokens: 4 };

let root: string;
let engine: OcrEngine;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-page-timeout-'));
  engine = await OcrEngine.load(await tinyCheckpoint('v3'), { threads: 1 });
});
after(() => rm(root, { recursive: true, force: true }));

/** Makes `model` abort `controller` once it has made `calls` more forward calls; returns what undoes it. */
function abortAfterForwardCalls(model: NativeModel, controller: AbortController, calls: number): () => void {
  const step = model.step;
  let made = 0;
  model.step = async (...args: Parameters<NativeModel['step']>) => {
    const outputs = await step.apply(model, args);
    if (++made === calls) controller.abort(new Error('deadline passed'));
    return outputs;
  };
  return () => {
    model.step = step;
  };
}

/** The decoder, counting its forward calls and aborting `controller` after the `abortAfter`-th. */
function countingDecoder(decoder: NativeModel, controller: AbortController, abortAfter: number): { decoder: NativeModel; calls: () => number } {
  let calls = 0;
  const counting = new Proxy(decoder, {
    get(target, property, receiver) {
      if (property !== 'step') return Reflect.get(target, property, receiver);
      return async (...args: Parameters<NativeModel['step']>) => {
        const logits = await target.step(...args);
        if (++calls === abortAfter) controller.abort(new Error('deadline passed'));
        return logits;
      };
    },
  });
  return { decoder: counting, calls: () => calls };
}

test('generation stops at the first step after its signal aborts and rejects with its reason', async () => {
  const controller = new AbortController();
  const { decoder, calls } = countingDecoder(engine.model, controller, 3);
  const request = { promptIds: [0, 100, 200], maxNewTokens: 50, stopAtEos: false };
  await assert.rejects(generate(decoder, [request, request], { signal: controller.signal }), /deadline passed/);
  assert.equal(calls(), 3, 'the prefill and two decode steps ran, none after the abort');
});

test('generation that is not aborted runs to its token budget', async () => {
  const controller = new AbortController();
  const { decoder, calls } = countingDecoder(engine.model, controller, 1000);
  const [result] = await generate(decoder, [{ promptIds: [0, 100, 200], maxNewTokens: 6, stopAtEos: false }], { signal: controller.signal });
  assert.equal(result.ids.length, 6);
  assert.equal(calls(), 6, 'the prefill and five decode steps');
});

describe('the pipeline past its deadline', () => {
  let storage: FileStorage;
  let pipeline: PagePipeline;

  before(async () => {
    storage = new FileStorage(await mkdtemp(path.join(root, 'pipeline-')));
    pipeline = new PagePipeline({ engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true });
    await storage.put(documentKeys(DOC_ID, 'pdf').source, await makePdf([LETTER, LETTER]));
  });

  const job = (page: number, options: OcrJobOptions): PageJob => ({
    data: {
      docId: DOC_ID,
      sourceUri: 'doc.pdf',
      storage: storage.url,
      type: 'pdf',
      firstPage: page,
      lastPage: page,
      keys: documentKeys(DOC_ID, 'pdf'),
      options,
      enqueuedAt: Date.now(),
    },
    attempt: 1,
  });

  test('jobs whose decodes the deadline stops are done with the text they read, flagged "timeout" for review', async () => {
    const deadline = new AbortController();
    // Past the deadline after the two prefills and three shared decode steps: both pages are decoding.
    const restore = abortAfterForwardCalls(engine.model, deadline, 5);
    let outcomes: PageOutcome[];
    try {
      outcomes = await Promise.all([job(1, ENDLESS), job(2, ENDLESS)].map((pageJob) => pipeline.processPage(pageJob, deadline.signal)));
    } finally {
      restore();
    }
    assert.deepEqual(outcomes.map((outcome) => outcome.status), ['done', 'done']);
    for (const outcome of outcomes) if (outcome.status === 'done') await pipeline.commit(outcome);
    for (const page of [1, 2]) {
      const key = pageResultKey(DOC_ID, page, 'json');
      const result = parsePageResultJson((await storage.get(key)).toString(), key);
      assert.equal(result.finish, 'timeout');
      assert.ok(result.flags?.includes('timeout'), `page ${page} flags ${String(result.flags)}`);
      assert.equal(result.needs_review, true);
      assert.ok(result.tokens.generated > 0 && result.tokens.generated < ENDLESS.maxNewTokens!, `page ${page}: ${result.tokens.generated} tokens`);
    }
  });

  test('jobs are not read at all once the deadline has passed', async () => {
    const reads: number[] = [];
    const recordingEngine = new Proxy(engine, {
      get: (target, property, receiver) =>
        property === 'recognizePages' ? (...args: Parameters<OcrEngine['recognizePages']>) => (reads.push(args[0].length), target.recognizePages(...args)) : Reflect.get(target, property, receiver),
    });
    const recording = new PagePipeline({ engine: recordingEngine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true });
    const outcome = await recording.processPage(job(1, QUICK), AbortSignal.abort(new Error('too late')));
    assert.deepEqual(outcome.status === 'failed' && outcome.reason, 'too late');
    assert.deepEqual(reads, []);
  });
});

/**
 * Records when every call ran ('<jobId>#<try>') and answers after 300 ms: the first try of
 * `failOn`'s job fails (to be retried), every other job is done. Nothing is read or stored.
 */
class ScriptedPipeline extends PagePipeline {
  readonly reads: { id: string; start: number; end: number }[] = [];
  failOn = '';

  override async processPage(job: PageJob): Promise<PageOutcome> {
    const read = { id: `${job.jobId}#${job.attempt}`, start: performance.now(), end: Infinity };
    this.reads.push(read);
    await new Promise((resolve) => setTimeout(resolve, 300));
    read.end = performance.now();
    const { docId, firstPage } = job.data;
    if (docId === this.failOn && job.attempt === 1) return { status: 'failed', docId, jobId: job.jobId, pages: [firstPage], reason: 'flaky', retryable: true };
    return { status: 'done', docId, jobId: job.jobId, pages: [] };
  }
}

/**
 * An engine stuck in native code: the first call with a job of `hangOn` never returns, and every
 * other call, once that one has started, waits behind it forever too.
 */
class HangingPipeline extends PagePipeline {
  #started: () => void = () => undefined;
  readonly #hangStarted = new Promise<void>((resolve) => (this.#started = resolve));

  constructor(
    options: ConstructorParameters<typeof PagePipeline>[0],
    readonly hangOn: string,
  ) {
    super(options);
  }

  override async processPage(job: PageJob): Promise<PageOutcome> {
    if (job.data.docId === this.hangOn) this.#started();
    await this.#hangStarted;
    return new Promise(() => undefined);
  }
}

describe('the page worker with a deadline', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let storage: FileStorage;
  let pages: Queue<PageJobData>;
  let documents = 0;

  before(() => {
    pages = new Queue(pageQueue('v3').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v3').prefix });
  });
  after(() => pages.close());
  beforeEach(async () => {
    await redis.flush();
    storage = new FileStorage(await mkdtemp(path.join(root, 'worker-')));
  });

  async function enqueuePdf(name: string, pageCount: number, ocr: OcrJobOptions, attempts: number, backoffMs = 10): Promise<string> {
    const input = path.join(root, `${name}-${Math.random().toString(36).slice(2)}.pdf`);
    // Lines differ from document to document, so that every one has its own docId.
    await writeFile(input, await makePdf(Array.from({ length: pageCount }, () => LETTER), ++documents));
    const summary = await enqueueDocuments([input], { ocr, storage, connection: redisOptions(redis.url, 'client'), attempts, backoffMs });
    return summary.queued[0].docId;
  }

  test('a page still decoding at the page timeout is done on its first try with what it read, flagged "timeout"', async () => {
    const docId = await enqueuePdf('slow', 1, ENDLESS, 2);
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    const connection = redisOptions(redis.url, 'worker');
    const pipeline = new PagePipeline({ engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true });
    // Time enough to render and encode the page on a loaded machine, far too little for its 8,000 tokens.
    const workers = [startPageWorker({ pipeline, connection, logger, pageTimeoutMs: 5000 }), startDocumentWorker({ storage, connection, logger })];
    try {
      const [settlement] = await watcher.waitFor([docId]);
      assert.equal(settlement.status, 'completed');
      assert.deepEqual(settlement.status === 'completed' && settlement.returnvalue.flagged, [{ page: 1, flags: ['timeout'] }]);
      const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
      assert.deepEqual({ failedPages: document.failedPages, flagged: document.flagged }, { failedPages: [], flagged: [{ page: 1, flags: ['timeout'] }] });
      const page = JSON.parse((await storage.get(`results/${docId}/pages/0001.json`)).toString()) as PageResultJson;
      assert.deepEqual({ finish: page.finish, needs_review: page.needs_review }, { finish: 'timeout', needs_review: true });
      assert.ok(page.tokens.generated > 0, 'the text read before the deadline is kept');
      const job = await pages.getJob(`${docId}.p1-1`);
      assert.deepEqual({ state: await job?.getState(), attemptsMade: job?.attemptsMade }, { state: 'completed', attemptsMade: 1 });
    } finally {
      await watcher.close();
      await Promise.all(workers.map((worker) => worker.close()));
    }
  });

  test('a page that failed before is read alone on its next try', async () => {
    const flaky = await enqueuePdf('flaky', 1, QUICK, 3);
    const steady = await enqueuePdf('steady', 4, QUICK, 3);
    const pipeline = new ScriptedPipeline({ engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true });
    pipeline.failOn = flaky;
    const worker = startPageWorker({ pipeline, connection: redisOptions(redis.url, 'worker'), logger, concurrency: 3 });
    try {
      await waitUntil(async () => (await pages.getJob(`${flaky}.p1-1`))?.finishedOn !== undefined, 10_000, 'the flaky page read again');
      await waitUntil(async () => (await pages.getJob(`${steady}.p4-4`))?.finishedOn !== undefined, 10_000, 'the steady pages read');
    } finally {
      await worker.close();
    }
    const overlap = (a: { start: number; end: number }, b: { start: number; end: number }) => a.start < b.end && b.start < a.end;
    const retry = pipeline.reads.find((read) => read.id === `${flaky}.p1-1#2`);
    assert.ok(retry, 'the flaky page was not tried again');
    assert.deepEqual(pipeline.reads.filter((read) => read !== retry && overlap(read, retry)).map((read) => read.id), []);
    const firstTries = pipeline.reads.filter((read) => read !== retry);
    assert.ok(firstTries.some((a) => firstTries.some((b) => a !== b && overlap(a, b))), 'first tries were never read side by side');
  });

  test('an engine that never returns fails its page, hands the other held jobs back untried, and reports the hang once', async () => {
    // A long backoff keeps the failed job delayed instead of claimed again before the worker closes.
    const hungDoc = await enqueuePdf('hung', 1, QUICK, 3, 60_000);
    const heldDoc = await enqueuePdf('held', 1, QUICK, 3);
    assert.notEqual(heldDoc, hungDoc);
    const pipeline = new HangingPipeline({ engine, storage, logger, host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true }, hungDoc);
    const hangs: EngineHungError[] = [];
    let reported: () => void = () => undefined;
    const hangReported = new Promise<void>((resolve) => (reported = resolve));
    const worker = startPageWorker({
      pipeline,
      connection: redisOptions(redis.url, 'worker'),
      logger,
      concurrency: 2,
      pageTimeoutMs: 200,
      hangGraceMs: 300,
      onEngineHung: (error) => {
        hangs.push(error);
        reported();
      },
    });
    try {
      await hangReported;
    } finally {
      await worker.close();
    }
    assert.equal(hangs.length, 1);
    assert.deepEqual(hangs[0].jobIds, [`${hungDoc}.p1-1`]);
    const hung = await pages.getJob(`${hungDoc}.p1-1`);
    assert.deepEqual(
      { state: await hung?.getState(), attemptsMade: hung?.attemptsMade, failedReason: hung?.failedReason },
      { state: 'delayed', attemptsMade: 1, failedReason: 'the engine did not return within 0.5 s (page timeout and grace): its worker exits to be restarted' },
    );
    const held = await pages.getJob(`${heldDoc}.p1-1`);
    // Back in the queue ('prioritized': every job carries a priority) with no try used up.
    assert.deepEqual({ state: await held?.getState(), attemptsMade: held?.attemptsMade }, { state: 'prioritized', attemptsMade: 0 });
  });
});
