// A job's lifecycle in one place: how often a page is tried, its priority (and the priority classes
// of API keys), how long finished jobs stay in Redis, and the flow option that lets a document be
// assembled when some of its pages failed.
import type { JobsOptions } from 'bullmq';

/** BullMQ's range: 1 is served first; jobs without a priority would be served before all of these. */
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 2 ** 21 - 1;
/** Every job gets a priority, so that `--priority` can move work both ahead of and behind the default. */
export const DEFAULT_PRIORITY = 1000;

/** The priority classes of API keys: interactive work is served before bulk work. */
export const PRIORITY_CLASSES = ['interactive', 'bulk'] as const;
export type PriorityClass = (typeof PRIORITY_CLASSES)[number];

/** Added to the priority of bulk work, so that it waits behind all interactive work of a priority below this. */
export const BULK_PRIORITY_OFFSET = 2 ** 20;

/** The job priority of work of `priorityClass` asked for at `priority`: bulk moves behind interactive, capped at MAX_PRIORITY. */
export function classPriority(priorityClass: PriorityClass, priority: number): number {
  return priorityClass === 'bulk' ? Math.min(MAX_PRIORITY, priority + BULK_PRIORITY_OFFSET) : priority;
}

export interface PageJobLifecycle {
  /** Tries per page job, the first included. Default DEFAULT_PAGE_ATTEMPTS. */
  attempts?: number;
  /** Wait before the second try; doubled for each further one. Default DEFAULT_PAGE_BACKOFF_MS. */
  backoffMs?: number;
  /** MIN_PRIORITY (first) … MAX_PRIORITY (last). Default DEFAULT_PRIORITY. */
  priority?: number;
}

/** Five tries 2, 4, 8 and 16 s apart ride out a storage or Redis outage of half a minute. */
export const DEFAULT_PAGE_ATTEMPTS = 5;
export const DEFAULT_PAGE_BACKOFF_MS = 2_000;

/** Assembly only fails when storage does; a few spaced tries ride out a short outage. */
const DOCUMENT_ATTEMPTS = 5;
const DOCUMENT_BACKOFF_MS = 2_000;

const DAY_S = 24 * 60 * 60;
/**
 * Finished jobs kept for `scriptorium status` and inspection. Results live in storage and a finished
 * document's _DONE marker outlives its jobs, so trimming them loses nothing. Failed documents are
 * kept until they are retried: enqueueing the document again retries its assembly.
 */
const KEEP_COMPLETED_PAGES = { age: DAY_S, count: 10_000 };
const KEEP_FAILED_PAGES = { age: 7 * DAY_S, count: 10_000 };
const KEEP_COMPLETED_DOCUMENTS = { age: 7 * DAY_S, count: 10_000 };

/** Options of a page job (a flow child). */
export function pageJobOptions(jobId: string, lifecycle: PageJobLifecycle = {}): JobsOptions {
  return {
    jobId,
    priority: lifecycle.priority ?? DEFAULT_PRIORITY,
    attempts: lifecycle.attempts ?? DEFAULT_PAGE_ATTEMPTS,
    backoff: { type: 'exponential', delay: lifecycle.backoffMs ?? DEFAULT_PAGE_BACKOFF_MS },
    // After its last try the child moves to the parent's ignored failures (reason kept) instead of
    // holding the parent: the document is assembled with the page marked failed once all have settled.
    ignoreDependencyOnFailure: true,
    removeOnComplete: KEEP_COMPLETED_PAGES,
    removeOnFail: KEEP_FAILED_PAGES,
  };
}

/** Options of a document job (the flow parent). */
export function documentJobOptions(jobId: string, priority = DEFAULT_PRIORITY): JobsOptions {
  return {
    jobId,
    priority,
    attempts: DOCUMENT_ATTEMPTS,
    backoff: { type: 'exponential', delay: DOCUMENT_BACKOFF_MS },
    removeOnComplete: KEEP_COMPLETED_DOCUMENTS,
    removeOnFail: false,
  };
}
