// The BullMQ worker of the pages queue: every claimed page job is read by its own
// PagePipeline.processPages call, and the engine's continuous batch merges their decodes: a page
// joins the running decode steps as soon as it is encoded and leaves when it is done, so concurrent
// pages share every pass over the weights. A job's return value is its outcome (result keys and
// stage timings); a failed page throws its reason, as an UnrecoverableError when another try cannot help.
//
// Faults: each page gets a deadline (pageTimeoutMs); its decode stops there and the job fails with
// "timed out after …", to be tried again. An engine that does not return even `hangGraceMs` after the
// deadline is hung (native code never came back): that page fails with the reason, pages held for
// later go back to the queue untouched, and onEngineHung tells the process to exit so that its
// supervisor starts a fresh one. A worker that dies outright holds its jobs until their locks expire;
// another worker then takes them over, and a page whose workers died more than maxStalledCount times
// fails. A page that failed or stalled before is read alone (no other page of this worker in the
// engine meanwhile), so that it cannot take other pages down with it again.
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

import { DEFAULT_MAX_SEQUENCES } from '../engine/ocr-engine.js';
import { parsePageJobData, type DonePageOutcome, type PageJobData, type PageOutcome } from '../jobs/job-types.js';
import { checkedJobData } from '../queue/job-data-check.js';
import { PAGES } from '../queue/queue-names.js';
import { leaveForeignStorageJob } from '../queue/storage-affinity.js';
import { SharedOrAlone } from './shared-or-alone.js';
import type { PageJob, PagePipeline } from './page-pipeline.js';

export const DEFAULT_PAGE_TIMEOUT_MS = 600_000;
export const DEFAULT_HANG_GRACE_MS = 120_000;
export const DEFAULT_LOCK_DURATION_MS = 120_000;
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;
export const DEFAULT_MAX_STALLED_COUNT = 2;

export interface PageWorkerOptions {
  pipeline: PagePipeline;
  /** Options for a `worker` connection (see redisOptions). */
  connection: RedisOptions;
  logger: Logger;
  /**
   * Page jobs held at once. Default 2 × DEFAULT_MAX_SEQUENCES: beyond the pages decoding together
   * (the engine's maxSequences), the next ones are fetched, rendered and encoded, ready to join.
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
   * Times a page job may lose its worker and be taken over; one more and it fails (document.json
   * then gives STALLED_PAGE_REASON). Jobs held beside a page that kills its worker lose theirs too, hence a limit
   * above 1. Default DEFAULT_MAX_STALLED_COUNT.
   */
  maxStalledCount?: number;
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
}

/** Why a page job failed when the deadline stopped its decode. */
export class PageTimeoutError extends Error {
  override readonly name = 'PageTimeoutError';
  constructor(timeoutMs: number) {
    super(`timed out after ${seconds(timeoutMs)} s: the page timeout stopped its decode`);
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

export function startPageWorker(options: PageWorkerOptions): Worker<PageJobData, DonePageOutcome> {
  const { pipeline, connection, logger } = options;
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
      const [outcome] = await Promise.race([pipeline.processPages([job], deadline.signal), engineHung, unavailable]);
      return outcome;
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

  const worker = new Worker<PageJobData, DonePageOutcome>(
    PAGES.name,
    async (job: Job<PageJobData>, token?: string) => {
      const data = checkedJobData(parsePageJobData, job.data);
      await leaveForeignStorageJob(job, token, data.storage, pipeline.storageUrl, logger);
      const pageJob: PageJob = { data, attempt: job.attemptsStarted, jobId: job.id };
      const alone = job.attemptsMade > 0 || job.stalledCounter > 0;
      let outcome: PageOutcome;
      try {
        outcome = await lanes.run(alone, () => readPage(pageJob));
      } catch (error) {
        if (!(error instanceof EngineUnavailableError)) throw error;
        await job.moveToWait(token);
        throw new WaitingError();
      }
      if (outcome.status === 'done') return outcome;
      throw outcome.retryable ? new Error(outcome.reason) : new UnrecoverableError(outcome.reason);
    },
    {
      connection,
      prefix: PAGES.prefix,
      concurrency: options.concurrency ?? 2 * DEFAULT_MAX_SEQUENCES,
      lockDuration: options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
      stalledInterval: options.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
      maxStalledCount: options.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT,
    },
  );
  worker.on('error', (error) => logger.error({ err: error }, 'page worker: queue error'));
  return worker;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
