// Requests per API key and window, counted in Redis so that every replica of the server shares one
// budget per key: scriptorium:ratelimit:<key name>:<window number>, expiring with its window.
import type { RedisClient } from '../queue/redis.js';

export interface RateLimit {
  /** Requests one key may make per window. */
  requests: number;
  windowMs: number;
}

export const DEFAULT_RATE_LIMIT: RateLimit = { requests: 600, windowMs: 60_000 };

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the window ends: the Retry-After of a refused request. */
  retryAfterSeconds: number;
}

/** Counts one request of `keyName` and says whether it is within the limit. */
export async function countRequest(redis: RedisClient, keyName: string, limit: RateLimit, now = Date.now()): Promise<RateDecision> {
  const window = Math.floor(now / limit.windowMs);
  const counter = `scriptorium:ratelimit:${keyName}:${window}`;
  const results = await redis.multi().incr(counter).pexpire(counter, limit.windowMs).exec();
  const [error, count] = results?.[0] ?? [new Error('the rate-limit transaction was discarded'), 0];
  if (error) throw error;
  const retryAfterSeconds = Math.ceil(((window + 1) * limit.windowMs - now) / 1000);
  return { allowed: Number(count) <= limit.requests, retryAfterSeconds };
}
