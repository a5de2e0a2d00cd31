// Whether Redis answers now, for health endpoints (the dashboard's /healthz, a worker's /readyz): a
// connection of its own with no offline queue and a short command timeout, so that PING fails at once
// while Redis is away instead of waiting for a reconnect. It keeps reconnecting in the background and
// logs when Redis goes away and when it is back.
import type { Logger } from 'pino';

import { connectRedis, redactedRedisUrl, type RedisClient, redisOptions } from './redis.js';

/** How long PING may take before Redis counts as unreachable. */
const PING_TIMEOUT_MS = 1_000;

export type RedisHealth = 'ok' | 'unreachable';

export class RedisHealthProbe {
  readonly #client: RedisClient;

  private constructor(client: RedisClient) {
    this.#client = client;
  }

  /** Resolves once the first connection attempt has succeeded or failed; never rejects. */
  static async open(redisUrl: string, logger: Logger): Promise<RedisHealthProbe> {
    const client = connectRedis({ ...redisOptions(redisUrl, 'client'), enableOfflineQueue: false, commandTimeout: PING_TIMEOUT_MS });
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
    await new Promise<void>((resolve) => {
      client.once('ready', resolve);
      client.once('error', () => resolve());
    });
    return new RedisHealthProbe(client);
  }

  async ping(): Promise<RedisHealth> {
    try {
      await this.#client.ping();
      return 'ok';
    } catch {
      return 'unreachable';
    }
  }

  close(): void {
    this.#client.disconnect();
  }
}
