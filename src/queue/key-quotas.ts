// Quotas per API key, counted in Redis so that every `serve` replica shares them: pages per UTC day
// and documents in flight (submitted and not yet settled). Each key name has
// - {scriptorium}:quota:pages:<name>:<YYYY-MM-DD>: the pages admitted that day, expiring two days later;
// - {scriptorium}:quota:in-flight:<name>: a sorted set of its docIds in flight, scored by admission time;
// and {scriptorium}:quota:keys holds each configured key's quota, as the last server started wrote it,
// for `status` and the metrics. Admission is one Lua script: it checks both quotas and charges both,
// so replicas admitting at the same moment never pass a limit together.
//
// A document leaves its key's set once it has settled. Nothing has to tell the set: every admission
// and every read first drops the docIds whose document job has finished (BullMQ sets `finishedOn`
// when a job completes or fails for good) or is gone. A worker that dies leaves its pages to other
// workers and the document still in flight, as it is; a job removed from Redis (or a submission whose
// flow was never added) frees its place after ADMISSION_GRACE_MS, the time a flow may take to be
// added after its admission. So no event that was missed, and no process that died, can leak a place.
import type { RedisClient } from './redis.js';

import type { PriorityClass } from './job-options.js';
import { jobKey, DOCUMENTS } from './queue-names.js';

export interface KeyQuota {
  priorityClass: PriorityClass;
  /** Pages admitted per UTC day; undefined: no limit. */
  pagesPerDay?: number;
  /** Documents submitted and not yet settled; undefined: no limit. */
  documentsInFlight?: number;
}

export interface KeyUsage {
  pagesToday: number;
  documentsInFlight: number;
  /** When the day's page count starts again from 0: the next UTC midnight, ISO 8601. */
  resetsAt: string;
}

export type QuotaName = 'pages-per-day' | 'documents-in-flight';

export interface QuotaRefusal {
  quota: QuotaName;
  limit: number;
  usage: number;
  /** pages-per-day: the next UTC midnight; documents-in-flight: null (a place frees when one of the key's documents settles). */
  resetsAt: string | null;
}

/** A document's charge, to give back when its flow could not be added after all. */
export interface Reservation {
  keyName: string;
  docId: string;
  pages: number;
  day: string;
}

/** How long an admitted docId whose document job is not in Redis keeps its place: staging and adding the flow take less. */
export const ADMISSION_GRACE_MS = 10 * 60_000;
const DAY_COUNTER_TTL_S = 2 * 24 * 3600;
// Under the queues' hash tag: the admission script reads the document jobs' keys too, so on a Redis
// Cluster every key it touches must live in their slot.
const QUOTA_PREFIX = `${DOCUMENTS.prefix}:quota`;
const KEYS_KEY = `${QUOTA_PREFIX}:keys`;
const DOCUMENT_JOB_PREFIX = jobKey(DOCUMENTS, '');

const inFlightKey = (keyName: string) => `${QUOTA_PREFIX}:in-flight:${keyName}`;
const dayKey = (keyName: string, day: string) => `${QUOTA_PREFIX}:pages:${keyName}:${day}`;
const utcDay = (now: number) => new Date(now).toISOString().slice(0, 10);
const nextUtcMidnight = (now: number) => new Date(Math.floor(now / 86_400_000 + 1) * 86_400_000).toISOString();

/** Drops the settled or lost docIds of KEYS[1]; ARGV[1] now, ARGV[2] the grace, ARGV[3] the document job key prefix. */
const RECONCILE = `
local function reconcile()
  local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  local now, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
  for i = 1, #entries, 2 do
    local job = ARGV[3] .. entries[i]
    local settled
    if redis.call('EXISTS', job) == 1 then
      settled = redis.call('HEXISTS', job, 'finishedOn') == 1
    else
      settled = now - tonumber(entries[i + 1]) > grace
    end
    if settled then redis.call('ZREM', KEYS[1], entries[i]) end
  end
  return redis.call('ZCARD', KEYS[1])
end
`;

/**
 * KEYS[1] the in-flight set, KEYS[2] the day's page counter; ARGV[1..3] as RECONCILE, ARGV[4] the
 * docId, ARGV[5] its pages, ARGV[6] the in-flight limit, ARGV[7] the daily limit (-1: none), ARGV[8]
 * the counter's TTL. Answers {'admitted', 0} or {quota name, usage}.
 */
const ADMIT = `${RECONCILE}
local inFlight = reconcile()
local inFlightLimit, pagesLimit, pages = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[5])
if inFlightLimit >= 0 and inFlight >= inFlightLimit and not redis.call('ZSCORE', KEYS[1], ARGV[4]) then
  return {'documents-in-flight', inFlight}
end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if pagesLimit >= 0 and used + pages > pagesLimit then return {'pages-per-day', used} end
redis.call('INCRBY', KEYS[2], pages)
redis.call('EXPIRE', KEYS[2], ARGV[8])
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
return {'admitted', 0}
`;

/** As ADMIT's keys and ARGV[1..3]: answers {documents in flight, pages today}. */
const USAGE = `${RECONCILE}
return {reconcile(), tonumber(redis.call('GET', KEYS[2]) or '0')}
`;

/**
 * KEYS[1] an in-flight set, KEYS[2] the page counter of the day the document was admitted; ARGV[1]
 * the docId, ARGV[2] its pages never read. Only a document still in the set is given back, so a
 * second cancel gives nothing; the counter is lowered while it exists, never below 0.
 */
const CANCEL = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local back = math.min(tonumber(ARGV[2]), tonumber(redis.call('GET', KEYS[2])))
if back > 0 then redis.call('DECRBY', KEYS[2], back) end
return back
`;

/** KEYS as ADMIT's; ARGV[1] the docId, ARGV[2] its pages. The counter is only lowered while it exists (it may have expired). */
const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECRBY', KEYS[2], ARGV[2]) end
return 0
`;

export class KeyQuotas {
  /** `redis`: a `client` connection, the caller's. */
  constructor(private readonly redis: RedisClient) {}

  /** Checks both quotas of `keyName` and charges the document to them, atomically; a refusal charges nothing. */
  async admit(
    keyName: string,
    quota: KeyQuota,
    document: { docId: string; pages: number },
    now = Date.now(),
  ): Promise<{ admitted: true; reservation: Reservation } | { admitted: false; refusal: QuotaRefusal }> {
    const day = utcDay(now);
    const [answer, usage] = (await this.redis.eval(
      ADMIT,
      2,
      inFlightKey(keyName),
      dayKey(keyName, day),
      now,
      ADMISSION_GRACE_MS,
      DOCUMENT_JOB_PREFIX,
      document.docId,
      document.pages,
      quota.documentsInFlight ?? -1,
      quota.pagesPerDay ?? -1,
      DAY_COUNTER_TTL_S,
    )) as [string, number];
    if (answer === 'admitted') return { admitted: true, reservation: { keyName, docId: document.docId, pages: document.pages, day } };
    if (answer === 'documents-in-flight') {
      return { admitted: false, refusal: { quota: answer, limit: quota.documentsInFlight!, usage, resetsAt: null } };
    }
    return { admitted: false, refusal: { quota: 'pages-per-day', limit: quota.pagesPerDay!, usage, resetsAt: nextUtcMidnight(now) } };
  }

  /** Gives back an admission whose document was not queued after all. */
  async release({ keyName, docId, pages, day }: Reservation): Promise<void> {
    await this.redis.eval(RELEASE, 2, inFlightKey(keyName), dayKey(keyName, day), docId, pages);
  }

  /**
   * A cancelled document leaves the in-flight set of whichever of these keys submitted it, and its
   * `unreadPages` go back to that key's count of the day it was admitted (while that day's count
   * exists). Answers the pages given back.
   */
  async cancelDocument(keyNames: readonly string[], docId: string, unreadPages: number): Promise<number> {
    let given = 0;
    for (const name of keyNames) {
      const admittedAt = await this.redis.zscore(inFlightKey(name), docId);
      if (admittedAt === null) continue;
      given += (await this.redis.eval(CANCEL, 2, inFlightKey(name), dayKey(name, utcDay(Number(admittedAt))), docId, unreadPages)) as number;
    }
    return given;
  }

  async usage(keyName: string, now = Date.now()): Promise<KeyUsage> {
    const [documentsInFlight, pagesToday] = (await this.redis.eval(
      USAGE,
      2,
      inFlightKey(keyName),
      dayKey(keyName, utcDay(now)),
      now,
      ADMISSION_GRACE_MS,
      DOCUMENT_JOB_PREFIX,
    )) as [number, number];
    return { pagesToday, documentsInFlight, resetsAt: nextUtcMidnight(now) };
  }

  /** Records the configured keys and their quotas (replacing those recorded before) for `status` and the metrics. */
  async recordKeys(keys: ReadonlyArray<{ name: string; quota: KeyQuota }>): Promise<void> {
    const transaction = this.redis.multi().del(KEYS_KEY);
    if (keys.length > 0) transaction.hset(KEYS_KEY, Object.fromEntries(keys.map(({ name, quota }) => [name, JSON.stringify(quota)])));
    await transaction.exec();
  }

  /** Every recorded key with its quota and usage, by name. */
  async recordedUsage(now = Date.now()): Promise<Array<{ name: string; quota: KeyQuota; usage: KeyUsage }>> {
    const recorded = Object.entries(await this.redis.hgetall(KEYS_KEY)).sort(([a], [b]) => a.localeCompare(b));
    return Promise.all(recorded.map(async ([name, quota]) => ({ name, quota: JSON.parse(quota) as KeyQuota, usage: await this.usage(name, now) })));
  }
}
