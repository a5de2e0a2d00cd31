// The Redis a queue command talks to: $REDIS_URL (default redis://127.0.0.1:6379), checked to
// answer before any queue is opened; for `scriptorium run` without REDIS_URL, a private
// redis-server child process that lives as long as the command.
import { startEmbeddedRedis } from '../queue/embedded-redis.js';
import { checkRedisReachable, redactedRedisUrl, redisUrlFromEnv } from '../queue/redis.js';

export interface QueueRedis {
  url: string;
  /** Where it is, for messages: the URL without password, or "a private redis-server on port N". */
  description: string;
  /** A private redis-server that lives as long as this command. */
  private: boolean;
  /** Stops the private redis-server; nothing for a shared Redis. */
  close(): Promise<void>;
}

export async function openQueueRedis(options: { privateWhenUnset?: boolean } = {}, env: NodeJS.ProcessEnv = process.env): Promise<QueueRedis> {
  if (options.privateWhenUnset && !env.REDIS_URL?.trim()) {
    const redis = await startEmbeddedRedis();
    return { url: redis.url, description: `a private redis-server on port ${redis.port}`, private: true, close: () => redis.close() };
  }
  const url = redisUrlFromEnv(env);
  await checkRedisReachable(url);
  return { url, description: redactedRedisUrl(url), private: false, close: async () => undefined };
}
