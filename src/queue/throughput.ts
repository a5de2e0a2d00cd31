// How much each queue completed in the last minutes, for the rate and ETA of `scriptorium status`.
//
// Workers add what they complete to one counter per queue and minute:
// scriptorium:throughput:<queue>:<minute since the epoch>, kept for an hour. This counts pages, not
// jobs (a V3 page group is one job of many pages), and it does not depend on how many completed
// jobs BullMQ still keeps: those are trimmed by count and age (job-options.ts), so counting their
// finishedOn timestamps would undercount a busy queue, and would mean reading job hashes. A window is
// then a single MGET. The minute is the worker's clock: hosts a few seconds apart only blur the
// window's edges.
import type { Redis } from 'ioredis';

import type { QueueName } from './queue-names.js';

const MINUTE_MS = 60_000;
/** How long a minute's counter is kept: the longest window status can ask for. */
export const MAX_WINDOW_MINUTES = 60;

function counterKey(queue: QueueName, minute: number): string {
  return `${queue.prefix}:throughput:${queue.name}:${minute}`;
}

/** Adds `amount` completed items (pages, documents) to the queue's counter of the current minute. */
export async function countCompleted(redis: Redis, queue: QueueName, amount: number, now = Date.now()): Promise<void> {
  const key = counterKey(queue, Math.floor(now / MINUTE_MS));
  await redis.multi().incrby(key, amount).expire(key, (MAX_WINDOW_MINUTES + 1) * 60).exec();
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
export async function recentThroughput(redis: Redis, queue: QueueName, windowMinutes: number, now = Date.now()): Promise<Throughput> {
  if (!(Number.isInteger(windowMinutes) && windowMinutes >= 1 && windowMinutes <= MAX_WINDOW_MINUTES)) {
    throw new RangeError(`the throughput window must be 1 to ${MAX_WINDOW_MINUTES} minutes, got ${windowMinutes}`);
  }
  const current = Math.floor(now / MINUTE_MS);
  const minutes = Array.from({ length: windowMinutes }, (_, i) => current - windowMinutes + 1 + i);
  const counts = (await redis.mget(minutes.map((minute) => counterKey(queue, minute)))).map((value) => Number(value ?? 0));
  const completed = counts.reduce((sum, count) => sum + count, 0);
  const firstBusy = counts.findIndex((count) => count > 0);
  if (firstBusy === -1) return { completed: 0, perMinute: 0 };
  const elapsedMinutes = Math.max(1, (now - minutes[firstBusy] * MINUTE_MS) / MINUTE_MS);
  return { completed, perMinute: completed / elapsedMinutes };
}
