// The BullMQ worker of the pages queue: page jobs claimed concurrently are collected into small
// batches and read by one PagePipeline.processPages call each, so their decode steps share every
// pass over the weights. A job's return value is its outcome (result keys and stage timings); a
// failed page throws its reason, as an UnrecoverableError when another try cannot help.
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

import type { PageJobData } from '../jobs/job-types.js';
import { JobBatcher } from '../queue/job-batcher.js';
import { PAGES } from '../queue/queue-names.js';
import type { PageJob, PageOutcome, PagePipeline } from './page-pipeline.js';

export type DonePageOutcome = Extract<PageOutcome, { status: 'done' }>;

export interface PageWorkerOptions {
  pipeline: PagePipeline;
  /** Options for a `worker` connection (see redisOptions). */
  connection: RedisOptions;
  logger: Logger;
  /** Most page jobs per processPages call (one batched decode). Default 4. */
  batch?: number;
  /**
   * Page jobs held at once. Default 2 × batch: while one batch is read, the next one is already
   * claimed and waits, so the engine never idles on a queue round trip.
   */
  concurrency?: number;
  /** How long a batch's first job waits for more to arrive. Default 5 ms. */
  batchWindowMs?: number;
  /**
   * The lock on a claimed job, renewed every half of it while the job is held (inference runs off the
   * event loop, so renewals are never starved). It only has to outlast a stalled event loop or a
   * Redis hiccup, not a page; it is also how long a crashed worker's jobs wait before another worker
   * takes them over. Default 120 s.
   */
  lockDurationMs?: number;
}

export function startPageWorker(options: PageWorkerOptions): Worker<PageJobData, DonePageOutcome> {
  const { pipeline, connection, logger } = options;
  const batch = options.batch ?? 4;
  const batcher = new JobBatcher<PageJob, PageOutcome>((jobs) => pipeline.processPages(jobs), {
    maxBatch: batch,
    windowMs: options.batchWindowMs,
  });
  const worker = new Worker<PageJobData, DonePageOutcome>(
    PAGES.name,
    async (job: Job<PageJobData>) => {
      const outcome = await batcher.submit({ data: job.data, attempt: job.attemptsStarted, jobId: job.id });
      if (outcome.status === 'done') return outcome;
      throw outcome.retryable ? new Error(outcome.reason) : new UnrecoverableError(outcome.reason);
    },
    {
      connection,
      prefix: PAGES.prefix,
      concurrency: options.concurrency ?? 2 * batch,
      lockDuration: options.lockDurationMs ?? 120_000,
    },
  );
  worker.on('error', (error) => logger.error({ err: error }, 'page worker: queue error'));
  return worker;
}
