// What one worker process is doing, gathered from its workers' events: the page jobs it holds and
// the pages it finished, for its heartbeat (live workers in `scriptorium status`); the same events
// feed the Prometheus metrics and the per-minute throughput and flagged-page counters in Redis.
import type { Worker } from 'bullmq';
import type { Logger } from 'pino';

import type { DocumentJobData, DocumentOutcome, DonePageOutcome, PageJobData } from '../jobs/job-types.js';
import type { LiveWorkerProgress } from '../queue/live-workers.js';
import { DOCUMENTS, pageQueue } from '../queue/queue-names.js';
import type { PageFlag } from '../jobs/page-flags.js';
import { countCompleted, countFlagged, pageKind, type CountedWork } from '../queue/throughput.js';
import type { DecodeStats } from './page-pipeline.js';
import { failureReasonLabel, observeStageTimes, workerMetrics } from './worker-metrics.js';
import type { RedisClient } from '../queue/redis.js';

export class WorkerActivity {
  readonly #redis: RedisClient;
  readonly #logger: Logger;
  readonly #currentJobs = new Set<string>();
  #pagesDone = 0;
  #pagesFailed = 0;

  /** `redis`: a `client` connection for the throughput counters. */
  constructor(redis: RedisClient, logger: Logger) {
    this.#redis = redis;
    this.#logger = logger;
  }

  watchPages(worker: Worker<PageJobData, DonePageOutcome>): void {
    const metrics = workerMetrics();
    worker.on('active', (job) => {
      if (job.id !== undefined) this.#currentJobs.add(job.id);
    });
    worker.on('completed', (job, outcome) => {
      this.#currentJobs.delete(job.id ?? '');
      const pages = outcome.pages.length;
      this.#pagesDone += pages;
      metrics.pagesDone.inc(pages);
      for (const page of outcome.pages) {
        observeStageTimes(page.timings_ms);
        for (const flag of page.flags ?? []) metrics.pagesFlagged.inc({ reason: flag });
      }
      this.#countFlags(outcome.pages.flatMap((page) => page.flags ?? []));
      this.#count({ queue: pageQueue(job.data.options.variant), kind: pageKind(job.data.options) }, pages);
    });
    worker.on('failed', (job, error) => {
      if (job === undefined) return;
      const reason = { reason: failureReasonLabel(error) };
      this.#currentJobs.delete(job.id ?? '');
      const pages = job.data.lastPage - job.data.firstPage + 1;
      // BullMQ sets finishedOn only when the job has no tries left.
      if (job.finishedOn === undefined) {
        metrics.pageRetries.inc(reason, pages);
      } else {
        this.#pagesFailed += pages;
        metrics.pagesFailed.inc(reason, pages);
      }
    });
  }

  watchDocuments(worker: Worker<DocumentJobData, DocumentOutcome>): void {
    worker.on('completed', () => this.#count({ queue: DOCUMENTS }, 1));
  }

  /** For PagePipelineOptions.onDecoded. */
  decoded({ generatedTokens, decodeMs }: DecodeStats): void {
    const metrics = workerMetrics();
    metrics.generatedTokens.inc(generatedTokens);
    metrics.decodeSeconds.inc(decodeMs / 1000);
    if (decodeMs > 0) metrics.decodeTokensPerSecond.set(generatedTokens / (decodeMs / 1000));
  }

  progress(): LiveWorkerProgress {
    return { currentJobs: [...this.#currentJobs], pagesDone: this.#pagesDone, pagesFailed: this.#pagesFailed };
  }

  #countFlags(flags: readonly PageFlag[]): void {
    if (flags.length === 0) return;
    countFlagged(this.#redis, flags).catch((error: unknown) =>
      this.#logger.warn({ err: error, flags }, 'could not count flagged pages for `scriptorium status`'),
    );
  }

  #count(work: CountedWork, amount: number): void {
    countCompleted(this.#redis, work, amount).catch((error: unknown) =>
      this.#logger.warn({ err: error, queue: work.queue.name, kind: work.kind, amount }, 'could not count completed work for the throughput of `scriptorium status`'),
    );
  }
}
