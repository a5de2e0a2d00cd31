// The BullMQ worker of the page queue of its engine's variant (so it never claims a page its model
// cannot read): every claimed page job is read by its own
// PagePipeline.processPage call, and the engine's continuous batch merges their decodes: a page
// joins the running decode steps as soon as it is encoded and leaves when it is done, so concurrent
// pages share every pass over the weights. A job's return value is its outcome (result keys and
// stage timings); a failed page throws its reason, as an UnrecoverableError when another try cannot help.
//
// Faults: each page gets a deadline (pageTimeoutMs); its decode stops there and the page is done
// with the text it read, flagged 'timeout' for review (a page whose decode had not begun by then
// fails with "timed out after …", to be tried again). An engine that does not return even `hangGraceMs` after the
// deadline is hung (native code never came back): that page fails with the reason, pages held for
// later go back to the queue untouched, and onEngineHung tells the process to exit so that its
// supervisor starts a fresh one. A worker that dies outright holds its jobs until their locks expire;
// another worker then takes them over, and a page whose workers died more than maxStalledCount times
// fails (PageClaims tells a dead worker from a live one that only lost its lock: the latter does not
// count). A page that failed or stalled before is read alone (no other page of this worker in the
// engine meanwhile), so that it cannot take other pages down with it again.
//
// Results: a try stores its pages under its own attempt keys; they become the pages' results only
// once BullMQ has recorded the job's completion, which it grants only to the lock's holder, and the
// 'completed' handler (or the document's assembly) commits them (page-commit.ts). A worker that finds
// it lost the lock before completing discards its try instead.
import { randomUUID } from 'node:crypto';

import { Backoffs, UnrecoverableError, WaitingError, Worker, type Job, type Telemetry } from 'bullmq';
import type { Logger } from 'pino';

import { parsePageJobData, type DonePageOutcome, type PageJobData, type PageOutcome } from '../jobs/job-types.js';
import { checkedJobData } from '../queue/job-data-check.js';
import { pageQueue } from '../queue/queue-names.js';
import { leaveForeignStorageJob } from '../queue/storage-affinity.js';
import { STALLED_PAGE_REASON } from './document-worker.js';
import { PageClaims } from './page-claims.js';
import { SharedOrAlone } from './shared-or-alone.js';
import type { PageJob, PagePipeline } from './page-pipeline.js';
import { connectRedis, type RedisConnectionOptions } from '../queue/redis.js';

export const DEFAULT_PAGE_TIMEOUT_MS = 600_000;
export const DEFAULT_HANG_GRACE_MS = 120_000;
export const DEFAULT_LOCK_DURATION_MS = 120_000;
/**
 * Shorter locks can be lost by a live worker: a lock is renewed every quarter to half of its
 * duration, so it survives event-loop stalls and Redis outages up to about half of it. The longest
 * stall measured under full CPU load is about 0.2 s; a Redis failover takes seconds.
 */
export const MIN_SAFE_LOCK_DURATION_MS = 10_000;
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;
export const DEFAULT_MAX_STALLED_COUNT = 2;
/**
 * BullMQ's own stall limit, far above maxStalledCount: it counts every expired lock, live workers'
 * too, and only keeps a page from cycling for ever when even those keep recurring.
 */
const LOST_LOCKS_ALLOWED = 20;

export interface PageWorkerOptions {
  pipeline: PagePipeline;
  /**
   * This process's live-worker key (LiveWorkerHeartbeat.key): other workers that take over a job it
   * lost look it up to tell a live worker from a dead one. Without it, every job this worker loses
   * counts as a death towards maxStalledCount.
   */
  workerKey?: string;
  /** Options for a `worker` connection (see redisOptions). */
  connection: RedisConnectionOptions;
  logger: Logger;
  /**
   * Page jobs held at once. startOcrWorkers holds 2 × the engine's batch: beyond the pages decoding
   * together, the next ones are fetched, rendered and encoded, ready to join. Default 16.
   */
  concurrency?: number;
  /**
   * The lock on a claimed job, renewed every half of it while the job is held (inference runs off the
   * event loop, so renewals are never starved). It only has to outlast a stalled event loop or a
   * Redis hiccup, not a page; it is also how long a crashed worker's jobs wait before another worker
   * takes them over. Default DEFAULT_LOCK_DURATION_MS.
   */
  lockDurationMs?: number;
  /** How often this worker looks for jobs whose lock expired (their worker died). Default DEFAULT_STALLED_INTERVAL_MS. */
  stalledIntervalMs?: number;
  /**
   * Times a page job's worker may die while reading it; one more and it fails (document.json then
   * gives STALLED_PAGE_REASON). A worker that lost the job's lock but is alive does not count. Jobs
   * held beside a page that kills its worker lose theirs too, hence a limit above 1. Default
   * DEFAULT_MAX_STALLED_COUNT.
   */
  maxStalledCount?: number;
  /** BullMQ telemetry (queue/tracing.ts): each page job a span of its document's trace. Default: none. */
  telemetry?: Telemetry;
  /** Deadline of one page job, from its start. Default DEFAULT_PAGE_TIMEOUT_MS. */
  pageTimeoutMs?: number;
  /** How long past the deadline the engine may take to stop before it counts as hung. Default DEFAULT_HANG_GRACE_MS. */
  hangGraceMs?: number;
  /**
   * Called once when the engine hangs. The engine can take no more work: the process should close its
   * workers (which waits until the hung batch's jobs are failed and the others handed back) and exit
   * non-zero. Default: only logged.
   */
  onEngineHung?: (error: EngineHungError) => void;
  /**
   * Asked before a claimed job is read, with its page count: false hands the job back to the queue
   * untried (the process is being recycled, worker-recycling.ts). Default: every job is read.
   */
  admit?: (pages: number) => boolean;
}

/** The deadline's reason: a page stopped while decoding keeps its text; one whose decode had not begun fails with it. */
export class PageTimeoutError extends Error {
  override readonly name = 'PageTimeoutError';
  constructor(timeoutMs: number) {
    super(`timed out after ${seconds(timeoutMs)} s: the page timeout passed before its decode began`);
  }
}

/** Why a page job failed when the engine did not return at all. */
export class EngineHungError extends Error {
  override readonly name = 'EngineHungError';
  constructor(
    waitedMs: number,
    /** The hung page's job. */
    readonly jobIds: readonly string[],
  ) {
    super(`the engine did not return within ${seconds(waitedMs)} s (page timeout and grace): its worker exits to be restarted`);
  }
}

/** A job claimed after the engine hung: handed back to the queue without using up a try. */
class EngineUnavailableError extends Error {}

/** Thrown for a job whose lock this worker lost before completing it (BullMQ then records nothing: the lock is not its). */
class LostLockError extends Error {
  override readonly name = 'LostLockError';
  constructor() {
    super('lost the lock on the job before completing it');
  }
}

export function startPageWorker(options: PageWorkerOptions): Worker<PageJobData, DonePageOutcome> {
  const { pipeline, connection, logger } = options;
  const claimsRedis = connectRedis(connection);
  claimsRedis.on('error', (error) => logger.debug({ err: error }, 'page claims connection: Redis error'));
  const claims = new PageClaims({ redis: claimsRedis, workerKey: options.workerKey ?? `unregistered:${randomUUID()}` });
  const maxDeaths = options.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT;
  const lockDurationMs = options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS;
  if (lockDurationMs < MIN_SAFE_LOCK_DURATION_MS) {
    logger.warn(
      { lockDurationMs, minSafeMs: MIN_SAFE_LOCK_DURATION_MS },
      'locks this short can be lost during a Redis outage: the page is then read twice (never failed for it)',
    );
  }
  const timeoutMs = options.pageTimeoutMs ?? DEFAULT_PAGE_TIMEOUT_MS;
  const graceMs = options.hangGraceMs ?? DEFAULT_HANG_GRACE_MS;
  const lanes = new SharedOrAlone();
  let hung: EngineHungError | undefined;
  // Rejects once the engine is found hung: pages in flight beside the hung one are stuck behind it
  // in the engine, and go back to the queue untried.
  let engineUnavailable: (error: EngineUnavailableError) => void = () => undefined;
  const unavailable = new Promise<never>((_, reject) => (engineUnavailable = reject));
  unavailable.catch(() => undefined);

  const readPage = async (job: PageJob): Promise<PageOutcome> => {
    if (hung !== undefined) throw new EngineUnavailableError();
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new PageTimeoutError(timeoutMs)), timeoutMs);
    let watchdog: NodeJS.Timeout | undefined;
    const engineHung = new Promise<never>((_, reject) => {
      watchdog = setTimeout(() => reject(new EngineHungError(timeoutMs + graceMs, [job.jobId ?? ''])), timeoutMs + graceMs);
    });
    try {
      return await Promise.race([pipeline.processPage(job, deadline.signal), engineHung, unavailable]);
    } catch (error) {
      if (error instanceof EngineHungError && hung === undefined) {
        hung = error;
        engineUnavailable(new EngineUnavailableError());
        logger.fatal({ docId: job.data.docId, jobId: job.jobId, err: error }, 'the engine is hung: failing its page and handing held jobs back');
        // After the page's job has been rejected: closing the worker then waits until it is failed.
        setImmediate(() => options.onEngineHung?.(error));
      }
      throw error;
    } finally {
      clearTimeout(timer);
      clearTimeout(watchdog);
    }
  };

  const queue = pageQueue(pipeline.variant);
  // A retry starts only once its backoff has passed since the failed try, by Redis's clock (PageClaims.failed).
  const waitOutBackoff = async (job: Job<PageJobData>) => {
    const backoff = job.opts.backoff === undefined ? undefined : Backoffs.normalize(job.opts.backoff);
    const backoffMs = backoff === undefined ? 0 : ((await Backoffs.calculate(backoff, job.attemptsMade, new Error('retry'), job)) ?? 0);
    const waitMs = await claims.retryWaitMs(job.id ?? '', backoffMs);
    if (waitMs <= 0) return;
    logger.debug({ docId: job.data.docId, jobId: job.id, attempt: job.attemptsStarted, waitMs }, 'retry released early (worker clocks disagree): waiting out its backoff');
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  };
  // Whether the lock is still this worker's, asked once the page is stored: a try whose job another
  // worker holds now, or that was given up, must not become the page's result. Renewing the lock also
  // keeps it through the completion that follows. Redis not answering decides nothing: the completion
  // will, and an uncommitted try is removed when its document is assembled.
  const discardIfLost = async (job: Job<PageJobData>, token: string, outcome: DonePageOutcome) => {
    const held = await job.extendLock(token, lockDurationMs).catch(() => undefined);
    if (held !== 0) return;
    logger.warn({ docId: outcome.docId, jobId: job.id }, 'lost the lock on a page job before completing it: its try is discarded (the job is read by another worker, or was given up)');
    await pipeline.discard(outcome);
    throw new LostLockError();
  };

  const worker = new Worker<PageJobData, DonePageOutcome>(
    queue.name,
    async (job: Job<PageJobData>, token?: string) => {
      const data = checkedJobData(parsePageJobData, job.data);
      await leaveForeignStorageJob(job, token, data.storage, pipeline.storageUrl, logger);
      if (options.admit?.(data.lastPage - data.firstPage + 1) === false) {
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const jobId = job.id ?? '';
      const claim = token ?? '';
      const pageJob: PageJob = { data, attempt: job.attemptsStarted, jobId };
      const triedBefore = job.attemptsMade > 0 || job.stalledCounter > 0;
      await claims.claim(jobId, claim);
      try {
        if (job.stalledCounter > 0 && (await claims.deaths(jobId)) > maxDeaths) throw new UnrecoverableError(STALLED_PAGE_REASON);
        if (job.attemptsMade > 0) await waitOutBackoff(job);
        let outcome: PageOutcome;
        try {
          outcome = await lanes.run(triedBefore, () => readPage(pageJob));
        } catch (error) {
          if (!(error instanceof EngineUnavailableError)) throw error;
          await job.moveToWait(token);
          throw new WaitingError();
        }
        if (outcome.status === 'failed') {
          if (!outcome.retryable) throw new UnrecoverableError(outcome.reason);
          await claims.failed(jobId).catch((error: unknown) => logger.warn({ err: error, jobId }, "could not record a failed try's time: its retry may come early"));
          throw new Error(outcome.reason);
        }
        await discardIfLost(job, claim, outcome);
        return outcome;
      } finally {
        await claims.release(jobId, claim).catch((error: unknown) => logger.warn({ err: error, jobId }, 'could not release the claim on a page job'));
      }
    },
    {
      connection,
      prefix: queue.prefix,
      concurrency: options.concurrency ?? 16,
      lockDuration: lockDurationMs,
      stalledInterval: options.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
      maxStalledCount: maxDeaths + LOST_LOCKS_ALLOWED,
      telemetry: options.telemetry,
    },
  );
  const forget = (jobId: string | undefined) => {
    if (jobId !== undefined) claims.forget(jobId).catch((error: unknown) => logger.warn({ err: error, jobId }, 'could not remove the claims of a settled page job'));
  };
  worker.on('completed', (job, outcome) => {
    forget(job.id);
    pipeline
      .commit(outcome)
      .catch((error: unknown) => logger.warn({ err: error, docId: outcome.docId, jobId: job.id }, "could not commit a completed page job's results: its document's assembly will"));
  });
  worker.on('failed', (job) => {
    if (job?.finishedOn !== undefined) forget(job.id);
  });
  worker.on('lockRenewalFailed', (jobIds) =>
    logger.warn({ jobIds }, 'lost the lock on page jobs (the event loop or Redis was too slow for the lock duration): another worker may read them; what this one reads of them is kept only if the lock is still its own at the end'),
  );
  worker.on('error', (error) => logger.error({ err: error }, 'page worker: queue error'));
  worker.on('closed', () => claimsRedis.disconnect());
  return worker;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
