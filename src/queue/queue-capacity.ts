// How much more work the queue can take, for `serve` and `enqueue`: each variant's page queue holds at
// most --max-queued-pages page jobs, and nothing is added while Redis is short of memory. Queued page
// jobs are counted from BullMQ's job counts (queue-depth.ts's `pending`: waiting, prioritized, delayed,
// paused and active), a few round trips whatever the depth. The limit is soft: producers that check at
// the same moment may each add their document, so the queue can pass it by those documents.
import { Queue } from 'bullmq';
import { Cluster, type Redis } from 'ioredis';

import { VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import { pageQueueDepths } from './queue-depth.js';
import { DOCUMENTS, pageQueue } from './queue-names.js';
import { connectRedis, redisOptions, type RedisClient } from './redis.js';
import { countedKinds, recentThroughput } from './throughput.js';

/** New work is refused once Redis has used this share of its maxmemory: the rest is left for the work already queued. */
export const REDIS_MEMORY_REFUSAL_SHARE = 0.9;
/** Retry-After when no rate says better: Redis short of memory, or a queue that completed nothing lately. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;
/** The window of the rate a full queue's Retry-After is estimated from. */
const RATE_WINDOW_MINUTES = 10;

export interface RedisMemory {
  usedBytes: number;
  /** Redis's maxmemory; null when it has none (maxmemory 0). */
  maxBytes: number | null;
  /** used ≥ REDIS_MEMORY_REFUSAL_SHARE × max: new work is refused. */
  short: boolean;
}

export interface VariantCapacity {
  /** '{scriptorium}:pages-v3' */
  queue: string;
  /** Page jobs queued or being read (a V3 parse-multi page group is one job). */
  queuedPages: number;
  /** --max-queued-pages; null: no limit. */
  maxQueuedPages: number | null;
  /** Page jobs the queue takes before it is full: 0 while Redis is short of memory; null: no limit. */
  acceptingPages: number | null;
}

export interface CapacityReport {
  variants: Record<Variant, VariantCapacity>;
  redis: RedisMemory;
}

export type Admission =
  | { admitted: true }
  | {
      admitted: false;
      /** queue-full: over --max-queued-pages; redis-memory: Redis is short of memory. */
      reason: 'queue-full' | 'redis-memory';
      message: string;
      retryAfterSeconds: number;
    };

/** Thrown by a producer that does not wait for room (`enqueue --no-wait`). */
export class NoRoomError extends Error {
  override readonly name = 'NoRoomError';
  constructor(
    readonly uri: string,
    readonly refusal: Extract<Admission, { admitted: false }>,
  ) {
    super(`no room for ${uri}: ${refusal.message}`);
  }
}

/**
 * used_memory and maxmemory from INFO memory of the Redis holding the queues: on a Cluster, the
 * master that serves their hash tag's slot (every queue key shares it), or when the client's slot
 * table does not name it yet, the master nearest its limit.
 */
export async function redisMemory(redis: RedisClient): Promise<RedisMemory> {
  if (!(redis instanceof Cluster)) return nodeMemory(redis);
  const slot = Number(await redis.cluster('KEYSLOT', DOCUMENTS.prefix));
  const [owner] = redis.slots[slot] ?? [];
  const masters = redis.nodes('master');
  const holder = masters.find((node) => `${node.options.host}:${node.options.port}` === owner);
  if (holder !== undefined) return nodeMemory(holder);
  const all = await Promise.all(masters.map(nodeMemory));
  const share = (memory: RedisMemory) => (memory.maxBytes === null ? 0 : memory.usedBytes / memory.maxBytes);
  return all.reduce((worst, memory) => (share(memory) > share(worst) ? memory : worst));
}

async function nodeMemory(redis: Redis): Promise<RedisMemory> {
  const info = await redis.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  const usedBytes = field('used_memory');
  const max = field('maxmemory');
  if (!Number.isFinite(usedBytes) || !Number.isFinite(max)) throw new Error('Redis INFO memory has no used_memory or maxmemory');
  const maxBytes = max === 0 ? null : max;
  return { usedBytes, maxBytes, short: maxBytes !== null && usedBytes >= REDIS_MEMORY_REFUSAL_SHARE * maxBytes };
}

export class QueueCapacity {
  readonly #redis: RedisClient;
  readonly #pages: Map<Variant, Queue>;

  /** `maxQueuedPages`: page jobs each variant's queue may hold; undefined: no limit but Redis's memory. */
  constructor(
    redisUrl: string,
    readonly maxQueuedPages: number | undefined,
  ) {
    this.#redis = connectRedis(redisOptions(redisUrl, 'client'));
    this.#redis.on('error', () => undefined); // callers see failed commands; health checks report outages
    this.#pages = new Map(
      VARIANTS.map((variant) => {
        const queue = pageQueue(variant);
        const opened = new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix });
        opened.on('error', () => undefined);
        return [variant, opened];
      }),
    );
  }

  /** What each page queue holds and can still take, and Redis's memory. */
  async report(): Promise<CapacityReport> {
    const [depths, redis] = await Promise.all([pageQueueDepths((variant) => this.#pages.get(variant)!), redisMemory(this.#redis)]);
    const variants = Object.fromEntries(
      VARIANTS.map((variant): [Variant, VariantCapacity] => {
        const queuedPages = depths[variant].pending;
        const max = this.maxQueuedPages ?? null;
        const acceptingPages = redis.short ? 0 : max === null ? null : Math.max(0, max - queuedPages);
        return [variant, { queue: depths[variant].queue, queuedPages, maxQueuedPages: max, acceptingPages }];
      }),
    ) as Record<Variant, VariantCapacity>;
    return { variants, redis };
  }

  /**
   * Whether `pageJobs` more page jobs of `variant` may be queued now. A document larger than the whole
   * limit is taken when its queue is empty, so that it is not refused for ever.
   */
  async admit(variant: Variant, pageJobs: number, now = Date.now()): Promise<Admission> {
    const { variants, redis } = await this.report();
    if (redis.short) {
      const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
      return {
        admitted: false,
        reason: 'redis-memory',
        message: `Redis is short of memory: ${mib(redis.usedBytes)} used of its maxmemory ${mib(redis.maxBytes!)}, and new work is refused from ${REDIS_MEMORY_REFUSAL_SHARE * 100}%`,
        retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS,
      };
    }
    const { queue, queuedPages, maxQueuedPages } = variants[variant];
    if (maxQueuedPages === null || queuedPages === 0 || queuedPages + pageJobs <= maxQueuedPages) return { admitted: true };
    return {
      admitted: false,
      reason: 'queue-full',
      message: `the queue is full: ${queue} holds ${queuedPages} page jobs and this document adds ${pageJobs}, over the limit of ${maxQueuedPages} (--max-queued-pages)`,
      retryAfterSeconds: await this.#drainSeconds(variant, queuedPages + pageJobs - maxQueuedPages, now),
    };
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
    await Promise.all([...this.#pages.values()].map((queue) => queue.close()));
  }

  /**
   * Seconds until `excess` page jobs of `variant` are read at the pages per minute its workers completed
   * lately (every kind of page together; a V3 page group counts its pages, so this errs short);
   * DEFAULT_RETRY_AFTER_SECONDS without a recent rate.
   */
  async #drainSeconds(variant: Variant, excess: number, now: number): Promise<number> {
    const queue = pageQueue(variant);
    const kinds = await countedKinds(this.#redis, queue);
    const rates = await Promise.all(kinds.map((kind) => recentThroughput(this.#redis, { queue, kind }, RATE_WINDOW_MINUTES, now)));
    const perMinute = rates.reduce((sum, rate) => sum + rate.perMinute, 0);
    return perMinute === 0 ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil((excess / perMinute) * 60));
  }
}

