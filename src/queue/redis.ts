// Where the queue lives: ioredis connection options from a redis:// or rediss:// URL (REDIS_URL by
// default), and a reachability check that turns "Redis is not there" into one clear message instead
// of endless reconnect attempts.
import { Redis, type RedisOptions } from 'ioredis';

import { describeCause } from '../storage/storage-error.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** How long the reachability check waits for a connection. */
const REACHABILITY_TIMEOUT_MS = 5_000;

const URL_FORM = 'redis://[user:password@]host[:port][/db] or rediss://… for TLS';

export class RedisConfigError extends Error {
  override readonly name = 'RedisConfigError';
}

/** REDIS_URL when set and not blank, else DEFAULT_REDIS_URL. */
export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/**
 * - `client`: queues, flow producers and status reads, whose commands should fail after ioredis's
 *   default 20 retries rather than hang while Redis is down.
 * - `worker`: BullMQ workers and queue events, whose blocking commands must wait for Redis forever
 *   (`maxRetriesPerRequest: null`, which BullMQ requires of them).
 */
export type RedisRole = 'client' | 'worker';

/** ioredis options for `url` (see URL_FORM); throws RedisConfigError for anything else. */
export function redisOptions(url: string, role: RedisRole): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisConfigError(`invalid Redis URL "${url}": use ${URL_FORM}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new RedisConfigError(`unsupported Redis URL scheme "${parsed.protocol}" in ${url}: use ${URL_FORM}`);
  }
  const dbText = parsed.pathname.replace(/^\//, '');
  const db = dbText === '' ? 0 : Number(dbText);
  if (!Number.isInteger(db) || db < 0) throw new RedisConfigError(`the database in Redis URL ${url} must be a number >= 0, as in redis://host:6379/2`);
  const options: RedisOptions = {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db,
  };
  if (parsed.username !== '') options.username = decodeURIComponent(parsed.username);
  if (parsed.password !== '') options.password = decodeURIComponent(parsed.password);
  if (parsed.protocol === 'rediss:') options.tls = { servername: options.host };
  if (role === 'worker') options.maxRetriesPerRequest = null;
  return options;
}

/** The URL without its password, for messages and logs. */
export function redactedRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** Resolves once Redis at `url` answers PING; rejects with a message that says what to do otherwise. */
export async function checkRedisReachable(url: string): Promise<void> {
  const client = new Redis({
    ...redisOptions(url, 'client'),
    lazyConnect: true,
    connectTimeout: REACHABILITY_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // The socket's error (ECONNREFUSED, ENOTFOUND, …) arrives as an event; connect() only says "Connection is closed."
  let socketError: unknown;
  client.on('error', (error: unknown) => {
    socketError = error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new RedisConfigError(
      `cannot reach Redis at ${redactedRedisUrl(url)} (${describeCause(socketError ?? error)}): start one (redis-server), point REDIS_URL at yours, ` +
        'or use `scriptorium run`, which starts a private one',
    );
  } finally {
    client.disconnect();
  }
}
