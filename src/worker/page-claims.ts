// Who has read a page job, so that the poison limit counts only workers that died on it. BullMQ
// counts every expired lock as a stall, whether its worker died or only fell behind with its
// renewals while alive; a live worker that lost its lock still finishes the page and stores it, so
// that loss must not bring the page closer to being given up.
//
// Each page job has a hash `{scriptorium}:page-claims:<jobId>`: one field per attempt being read now (the
// worker's live-worker key and the attempt's lock token; the value names its host and pid), removed
// when that attempt ends, however it ends, and a `deaths` count. A worker taking the job over settles every claim left by others: a claim
// whose worker is gone (its live-worker entry expired, or its pid no longer runs on this host) is a
// death; a claim whose worker still beats, or that its worker removes meanwhile, is not. A dead
// worker's entry expires within three heartbeats of its death, which bounds the wait.
//
// The hash also holds when the job's latest try failed, by Redis's clock (`failedAt`), so that its
// retry waits out its backoff whatever the workers' clocks say: BullMQ stamps a retry's delay with the
// failing worker's clock and releases it by the releasing worker's, so a worker whose clock is behind
// would have the page retried at once, its backoff lost.
import os from 'node:os';


import { DOCUMENTS } from '../queue/queue-names.js';
import type { RedisClient } from '../queue/redis.js';

const DEATHS_FIELD = 'deaths';
const FAILED_AT_FIELD = 'failedAt';
/** Fields of the hash that are not claims. */
const RECORD_FIELDS: ReadonlySet<string> = new Set([DEATHS_FIELD, FAILED_AT_FIELD]);
/** Claims of jobs that never finish (their queue was obliterated) do not stay for ever. */
const CLAIMS_TTL_S = 7 * 24 * 3600;
const POLL_MS = 250;

interface ClaimHolder {
  host: string;
  pid: number;
}

export interface PageClaimsOptions {
  /** A `client` connection. */
  redis: RedisClient;
  /** This worker's live-worker key (its heartbeat's key): others look it up to tell whether it is alive. */
  workerKey: string;
}

export class PageClaims {
  readonly #redis: RedisClient;
  readonly #workerKey: string;

  constructor({ redis, workerKey }: PageClaimsOptions) {
    this.#redis = redis;
    this.#workerKey = workerKey;
  }

  /** Records that this worker reads the job now, under the lock `token`. */
  async claim(jobId: string, token: string): Promise<void> {
    const holder: ClaimHolder = { host: os.hostname(), pid: process.pid };
    await this.#redis.multi().hset(claimsKey(jobId), this.#field(token), JSON.stringify(holder)).expire(claimsKey(jobId), CLAIMS_TTL_S).exec();
  }

  /** The attempt under `token` has ended (done, failed or handed back). */
  async release(jobId: string, token: string): Promise<void> {
    await this.#redis.hdel(claimsKey(jobId), this.#field(token));
  }

  /** The job is settled for good: its record goes. */
  async forget(jobId: string): Promise<void> {
    await this.#redis.del(claimsKey(jobId));
  }

  /**
   * How many workers died while reading the job, once every other claim on it is settled: waits
   * (at most about three heartbeats) until each other claimer has either shown it is alive or is gone.
   */
  async deaths(jobId: string): Promise<number> {
    const key = claimsKey(jobId);
    const claims = await this.#redis.hgetall(key);
    // Attempts of this worker are alive by definition: it is running this code.
    const others = Object.entries(claims).filter(([field]) => !RECORD_FIELDS.has(field) && workerKeyOf(field) !== this.#workerKey);
    await Promise.all(others.map(([field, holder]) => this.#settle(key, field, parseHolder(holder))));
    return Number((await this.#redis.hget(key, DEATHS_FIELD)) ?? 0);
  }

  /** Records, by Redis's clock, that a try of the job failed and is to be retried. */
  async failed(jobId: string): Promise<void> {
    await this.#redis.hset(claimsKey(jobId), FAILED_AT_FIELD, String(await this.#redisNowMs()));
  }

  /** How much longer, by Redis's clock, the job's retry must wait for `backoffMs` to have passed since its latest failed try. */
  async retryWaitMs(jobId: string, backoffMs: number): Promise<number> {
    const [failedAt, now] = await Promise.all([this.#redis.hget(claimsKey(jobId), FAILED_AT_FIELD), this.#redisNowMs()]);
    return failedAt === null ? 0 : Math.max(0, Math.min(backoffMs, Number(failedAt) + backoffMs - now));
  }

  async #redisNowMs(): Promise<number> {
    const [seconds, microseconds] = await this.#redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
  }

  #field(token: string): string {
    return `${this.#workerKey} ${token}`;
  }

  /** Waits until the claim is removed (its attempt ended), its worker beats again, or its worker is gone (a death). */
  async #settle(key: string, field: string, holder: ClaimHolder | undefined): Promise<void> {
    const workerKey = workerKeyOf(field);
    const firstBeat = await this.#redis.hget(workerKey, 'lastHeartbeat');
    for (;;) {
      if (!(await this.#redis.hexists(key, field))) return;
      const beat = await this.#redis.hget(workerKey, 'lastHeartbeat');
      if (beat !== null && beat !== firstBeat) return;
      if (beat === null || (holder !== undefined && !mayBeRunning(holder))) {
        // Only the one that removes the claim counts the death.
        if ((await this.#redis.hdel(key, field)) === 1) await this.#redis.hincrby(key, DEATHS_FIELD, 1);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

/** The live-worker key of a claim field `<workerKey> <token>`. */
function workerKeyOf(field: string): string {
  const space = field.lastIndexOf(' ');
  return space < 0 ? field : field.slice(0, space);
}

/** {scriptorium}:page-claims:<jobId>; page job ids are unique across the variants' page queues. */
export function claimsKey(jobId: string): string {
  return `${DOCUMENTS.prefix}:page-claims:${jobId}`;
}

function parseHolder(text: string): ClaimHolder | undefined {
  try {
    const holder = JSON.parse(text) as Partial<ClaimHolder>;
    return typeof holder.host === 'string' && Number.isInteger(holder.pid) ? (holder as ClaimHolder) : undefined;
  } catch {
    return undefined;
  }
}

/** false only when the holder ran on this host and its process is gone. */
function mayBeRunning(holder: ClaimHolder): boolean {
  if (holder.host !== os.hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
