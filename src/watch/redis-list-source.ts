// Events from a Redis list, as MinIO's Redis notification target pushes them in access format (one
// JSON entry per event, RPUSH onto the list). Each entry is moved atomically onto
// '<list>:processing' (BLMOVE) and removed from there only once its documents are enqueued, so an
// entry is never lost: one a crashed watch was holding is taken up again when a watch starts (with
// several watches on one list, that may be an entry another is still handling: enqueueing it twice
// adds nothing).
// Entries that are no notification at all move to '<list>:malformed', where they can be inspected.
// On a Redis Cluster the three lists must share a slot (BLMOVE and MULTI touch two of them at once),
// so the list's name must carry a hash tag there, e.g. '{scriptorium}:bucket-events'.
import type { Logger } from 'pino';

import { connectRedis, hashTagOf, redactedRedisUrl, RedisConfigError, redisOptions } from '../queue/redis.js';
import { RetryDelay } from './retry-delay.js';
import { S3NotificationError } from './s3-notifications.js';
import type { S3EventEnqueuer } from './s3-event-enqueuer.js';

export interface RedisListSourceOptions {
  /** The Redis holding the list (a Redis URL, see redisOptions). */
  redisUrl: string;
  /** The list MinIO pushes onto (its notify_redis `key`). */
  listKey: string;
  enqueuer: Pick<S3EventEnqueuer, 'enqueueNotification'>;
  logger: Logger;
  /** Seconds one blocking wait for an entry lasts; close() takes up to this long. Default 1. */
  blockSeconds?: number;
}

export interface RedisListSource {
  readonly processingKey: string;
  readonly malformedKey: string;
  /** Finishes the entry in hand, stops taking entries and closes the connection. */
  close(): Promise<void>;
}

export function processingListKey(listKey: string): string {
  return `${listKey}:processing`;
}

export function malformedListKey(listKey: string): string {
  return `${listKey}:malformed`;
}

export async function startRedisListSource(options: RedisListSourceOptions): Promise<RedisListSource> {
  const { listKey, enqueuer } = options;
  const processingKey = processingListKey(listKey);
  const malformedKey = malformedListKey(listKey);
  const logger = options.logger.child({ source: 'redis-list', list: listKey });
  const blockSeconds = options.blockSeconds ?? 1;
  // Blocking commands need a connection of their own that waits for Redis rather than failing.
  const connection = redisOptions(options.redisUrl, 'worker');
  if (connection.clusterNodes !== undefined && hashTagOf(listKey) === undefined) {
    throw new RedisConfigError(
      `--redis-list "${listKey}" has no hash tag: on a Redis Cluster the list and its :processing and :malformed lists must share a slot, so name it with one, e.g. "{${listKey}}"`,
    );
  }
  const redis = connectRedis(connection);
  const stop = new AbortController();
  const delay = new RetryDelay();

  /** Enqueues the entry's documents, or sets it aside if it is no notification, then takes it off the processing list. */
  async function settle(entry: string): Promise<void> {
    try {
      await enqueuer.enqueueNotification(entry, logger);
    } catch (error) {
      if (!(error instanceof S3NotificationError)) throw error;
      logger.error({ reason: error.message, malformedList: malformedKey }, 'an entry that is no S3 event notification was set aside');
      await redis.multi().rpush(malformedKey, entry).lrem(processingKey, 1, entry).exec();
      return;
    }
    await redis.lrem(processingKey, 1, entry);
  }

  /** Until the entry is settled: a failure is retried after a delay, the entry staying in the processing list. */
  async function handle(entry: string): Promise<void> {
    while (!stop.signal.aborted) {
      try {
        await settle(entry);
        delay.reset();
        return;
      } catch (error) {
        logger.error({ err: error, retryInMs: delay.nextMs }, 'enqueueing failed; the entry stays in the processing list and is tried again');
        await delay.wait(stop.signal);
      }
    }
  }

  /** Waits for the next entry and moves it to the processing list; null when none came or reading failed. */
  async function nextEntry(): Promise<string | null> {
    try {
      return await redis.blmove(listKey, processingKey, 'LEFT', 'RIGHT', blockSeconds);
    } catch (error) {
      logger.error({ err: error, retryInMs: delay.nextMs }, 'cannot read the event list');
      await delay.wait(stop.signal);
      return null;
    }
  }

  /** `left`: entries taken by a watch that stopped before it finished them (a crash, a kill). */
  async function run(left: string[]): Promise<void> {
    if (left.length > 0) logger.info({ entries: left.length }, 'taking up entries left in the processing list');
    for (const entry of left) await handle(entry);
    while (!stop.signal.aborted) {
      const entry = await nextEntry();
      if (entry !== null) await handle(entry);
    }
  }

  const [type, left] = await Promise.all([redis.type(listKey), redis.lrange(processingKey, 0, -1)]);
  if (type !== 'list' && type !== 'none') {
    redis.disconnect();
    throw new Error(`the Redis key ${listKey} holds a ${type}, not a list of events: configure MinIO's Redis target with format=access (namespace format writes a hash)`);
  }
  logger.info({ redis: redactedRedisUrl(options.redisUrl), processingList: processingKey }, 'watching the event list');
  const running = run(left);
  return {
    processingKey,
    malformedKey,
    async close() {
      stop.abort();
      try {
        await running;
      } finally {
        await redis.quit();
      }
    },
  };
}
