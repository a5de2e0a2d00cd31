// A Redis connection for health answers (`scriptorium serve` /readyz, `scriptorium dashboard` /healthz).
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

import { redactedRedisUrl, redisOptions } from '../queue/redis.js';

/** How long a health check waits for PONG before calling Redis unreachable. */
const PING_TIMEOUT_MS = 1_000;

/**
 * A connection only for /healthz, resolved once ready: no offline queue and a command timeout, so that
 * PING fails at once while Redis is away instead of waiting for a reconnect. It keeps reconnecting in
 * the background and logs when Redis goes away and when it is back.
 */
export async function openHealthConnection(redisUrl: string, logger: Logger): Promise<Redis> {
  const client = new Redis({ ...redisOptions(redisUrl, 'client'), enableOfflineQueue: false, commandTimeout: PING_TIMEOUT_MS, lazyConnect: true });
  let lost = false;
  client.on('error', (error: Error) => {
    if (lost) return;
    lost = true;
    logger.warn({ redis: redactedRedisUrl(redisUrl), err: error.message }, 'lost the connection to Redis; reconnecting');
  });
  client.on('ready', () => {
    if (!lost) return;
    lost = false;
    logger.info({ redis: redactedRedisUrl(redisUrl) }, 'Redis is back');
  });
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw new Error(`Redis at ${redactedRedisUrl(redisUrl)} went away while starting: ${(error as Error).message}`);
  }
  return client;
}

export async function ping(client: Redis): Promise<'ok' | 'unreachable'> {
  try {
    await client.ping();
    return 'ok';
  } catch {
    return 'unreachable';
  }
}
