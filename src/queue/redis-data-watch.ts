// Redis replaced by an empty one (FLUSHALL, or a server restarted without persistence) loses every
// queued job without an error anyone would read: workers reconnect and find nothing to do. A marker
// key holding a random id, set by whichever process finds it missing, tells such a loss apart: a
// process that knew one id and then finds none, or another, knows that the data it knew is gone. It
// reports that once per loss (the caller logs how to recover: `scriptorium reconcile`) and goes on.
import { randomUUID } from 'node:crypto';

import type { RedisClient } from './redis.js';

/** The marker: a random id, never expiring, as long as Redis keeps its data. */
export const REDIS_DATA_ID_KEY = 'scriptorium:redis-data-id';
export const DEFAULT_REDIS_DATA_CHECK_MS = 5_000;

export interface RedisDataLoss {
  /** The marker this process knew. */
  previousDataId: string;
  /** The marker Redis holds now (this process may have set it). */
  dataId: string;
}

export interface RedisDataWatchOptions {
  /** Called once per loss found. */
  onLost: (loss: RedisDataLoss) => void;
  /** A check that could not reach Redis (it is tried again at the next one). Default: ignored. */
  onError?: (error: unknown) => void;
  /** Default DEFAULT_REDIS_DATA_CHECK_MS. */
  intervalMs?: number;
}

/** The log line of a loss: what is gone, and how to queue the unfinished documents of `storageUrl` again. */
export function redisDataLossMessage(storageUrl: string): string {
  return `Redis lost its data (emptied, or restarted without persistence): the jobs queued in it are gone; run \`scriptorium reconcile --storage ${storageUrl}\` to queue the unfinished documents again`;
}

export class RedisDataWatch {
  readonly #redis: RedisClient;
  readonly #options: RedisDataWatchOptions;
  readonly #timer: NodeJS.Timeout;
  #known: string | undefined;
  #checking: Promise<void> | undefined;

  /** Reads (or sets) the marker, then checks it every interval on `redis` (a `client` connection). */
  static async start(redis: RedisClient, options: RedisDataWatchOptions): Promise<RedisDataWatch> {
    const watch = new RedisDataWatch(redis, options);
    await watch.check();
    return watch;
  }

  private constructor(redis: RedisClient, options: RedisDataWatchOptions) {
    this.#redis = redis;
    this.#options = options;
    this.#timer = setInterval(() => void this.check(), options.intervalMs ?? DEFAULT_REDIS_DATA_CHECK_MS);
    this.#timer.unref();
  }

  /** One check now (the timer's, and for tests); a check already running is awaited instead. */
  check(): Promise<void> {
    this.#checking ??= this.#check()
      .catch((error: unknown) => this.#options.onError?.(error))
      .finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #check(): Promise<void> {
    await this.#redis.set(REDIS_DATA_ID_KEY, randomUUID(), 'NX');
    const dataId = await this.#redis.get(REDIS_DATA_ID_KEY);
    if (dataId === null) return; // emptied between the two commands: the next check sets it
    const previousDataId = this.#known;
    this.#known = dataId;
    if (previousDataId !== undefined && previousDataId !== dataId) this.#options.onLost({ previousDataId, dataId });
  }
}
