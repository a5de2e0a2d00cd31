// How much each queue completed in the last minutes, for the rates and ETAs of `scriptorium status`
// and of the API's document status (work-left.ts).
//
// Workers add what they complete to one counter per queue, kind of page and minute:
// {scriptorium}:throughput:documents:<minute since the epoch> and
// {scriptorium}:throughput:pages-v3:<variant>-<task>-<mode>:<minute>, kept for an hour. Kinds of page are
// counted apart because they differ in speed many times over (a tiny page against a gundam one), so
// one rate over a mixed queue would predict nothing. This counts pages, not
// jobs (a V3 page group is one job of many pages), and it does not depend on how many completed
// jobs BullMQ still keeps: those are trimmed by count and age (job-options.ts), so counting their
// finishedOn timestamps would undercount a busy queue, and would mean reading job hashes. A window is
// then a single MGET. The minute is the worker's clock: hosts a few seconds apart only blur the
// window's edges. Flagged pages are counted the same way, per flag, over every page queue:
// {scriptorium}:throughput:flagged:<flag>:<minute>.
import type { OcrJobOptions } from '../jobs/job-types.js';
import { PAGE_FLAGS, type PageFlag } from '../jobs/page-flags.js';
import { DOCUMENTS, type QueueName } from './queue-names.js';
import type { RedisClient } from './redis.js';

const MINUTE_MS = 60_000;
/** How long a minute's counter is kept: the longest window status can ask for. */
export const MAX_WINDOW_MINUTES = 60;

const COUNTER_TTL_SECONDS = (MAX_WINDOW_MINUTES + 1) * 60;

/** What one series of counters counts: a queue's completed items, for pages one kind of page. */
export interface CountedWork {
  queue: QueueName;
  /** pageKind of the pages; none for documents. */
  kind?: string;
}

/** A kind of page, by the options that set its cost: 'v1-markdown-gundam'. */
export function pageKind({ variant, task, mode }: Pick<OcrJobOptions, 'variant' | 'task' | 'mode'>): string {
  return `${variant}-${task}-${mode}`;
}

function counterKey({ queue, kind }: CountedWork, minute: number): string {
  return `${queue.prefix}:throughput:${queue.name}:${kind === undefined ? '' : `${kind}:`}${minute}`;
}

function flaggedKey(flag: PageFlag, minute: number): string {
  return `${DOCUMENTS.prefix}:throughput:flagged:${flag}:${minute}`;
}

/** The set of the kinds counted in the last hour. */
function kindsKey(queue: QueueName): string {
  return `${queue.prefix}:throughput:${queue.name}:kinds`;
}

/** Adds `amount` completed items (pages, documents) to the current minute's counter of `work`. */
export async function countCompleted(redis: RedisClient, work: CountedWork, amount: number, now = Date.now()): Promise<void> {
  const key = counterKey(work, Math.floor(now / MINUTE_MS));
  const transaction = redis.multi().incrby(key, amount).expire(key, COUNTER_TTL_SECONDS);
  if (work.kind !== undefined) transaction.sadd(kindsKey(work.queue), work.kind).expire(kindsKey(work.queue), COUNTER_TTL_SECONDS);
  await transaction.exec();
}

/** Adds stored pages' flags to the current minute's counters, one count per flag. */
export async function countFlagged(redis: RedisClient, flags: readonly PageFlag[], now = Date.now()): Promise<void> {
  const minute = Math.floor(now / MINUTE_MS);
  const transaction = redis.multi();
  for (const flag of flags) transaction.incrby(flaggedKey(flag, minute), 1).expire(flaggedKey(flag, minute), COUNTER_TTL_SECONDS);
  await transaction.exec();
}

/** Pages flagged in the last `windowMinutes` minutes (the current minute included), per flag. */
export async function recentFlagged(redis: RedisClient, windowMinutes: number, now = Date.now()): Promise<Record<PageFlag, number>> {
  const minutes = windowMinutesOf(windowMinutes, now);
  const counts = await redis.mget(PAGE_FLAGS.flatMap((flag) => minutes.map((minute) => flaggedKey(flag, minute))));
  const sum = (at: number) => counts.slice(at * minutes.length, (at + 1) * minutes.length).reduce((total, count) => total + Number(count ?? 0), 0);
  return Object.fromEntries(PAGE_FLAGS.map((flag, at) => [flag, sum(at)])) as Record<PageFlag, number>;
}

/** The minutes since the epoch of a window ending with the current one. */
function windowMinutesOf(windowMinutes: number, now: number): number[] {
  if (!(Number.isInteger(windowMinutes) && windowMinutes >= 1 && windowMinutes <= MAX_WINDOW_MINUTES)) {
    throw new RangeError(`the throughput window must be 1 to ${MAX_WINDOW_MINUTES} minutes, got ${windowMinutes}`);
  }
  const current = Math.floor(now / MINUTE_MS);
  return Array.from({ length: windowMinutes }, (_, i) => current - windowMinutes + 1 + i);
}

/** The kinds of `queue` counted in the last hour (a kind idle for longer may linger until the set expires). */
export async function countedKinds(redis: RedisClient, queue: QueueName): Promise<string[]> {
  return (await redis.smembers(kindsKey(queue))).sort();
}

export interface Throughput {
  /** Items completed in the window. */
  completed: number;
  /** Items per minute over the window; 0 when none completed. */
  perMinute: number;
}

/**
 * Items completed in the last `windowMinutes` minutes (the current minute included). The rate divides
 * by the time since the window's first busy minute began, at least one minute, so that a run that
 * started two minutes ago is not spread over the whole window.
 */
export async function recentThroughput(redis: RedisClient, work: CountedWork, windowMinutes: number, now = Date.now()): Promise<Throughput> {
  const minutes = windowMinutesOf(windowMinutes, now);
  const counts = (await redis.mget(minutes.map((minute) => counterKey(work, minute)))).map((value) => Number(value ?? 0));
  const completed = counts.reduce((sum, count) => sum + count, 0);
  const firstBusy = counts.findIndex((count) => count > 0);
  if (firstBusy === -1) return { completed: 0, perMinute: 0 };
  const elapsedMinutes = Math.max(1, (now - minutes[firstBusy] * MINUTE_MS) / MINUTE_MS);
  return { completed, perMinute: completed / elapsedMinutes };
}
