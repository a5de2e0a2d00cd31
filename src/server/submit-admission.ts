// Whether a submitted document may be queued, decided once its pages are known and before its source is
// staged: room in its variant's page queue and in Redis's memory (queue/queue-capacity.ts), then its
// API key's quotas (queue/key-quotas.ts), which admission charges. Also GET /v1/capacity's answer.
import type { RedisClient } from '../queue/redis.js';

import type { DocumentToQueue } from '../producer/enqueue.js';
import { KeyQuotas, type QuotaRefusal, type Reservation } from '../queue/key-quotas.js';
import { DEFAULT_RETRY_AFTER_SECONDS, QueueCapacity } from '../queue/queue-capacity.js';
import type { ApiKey } from './api-keys.js';
import type { CapacityAnswer } from './api-types.js';
import { HttpError } from './http-error.js';

export class SubmitAdmission {
  readonly #capacity: QueueCapacity;
  readonly #quotas: KeyQuotas;
  readonly #keyNames: string[];

  private constructor(capacity: QueueCapacity, quotas: KeyQuotas, keys: readonly ApiKey[]) {
    this.#capacity = capacity;
    this.#quotas = quotas;
    this.#keyNames = keys.map((key) => key.name);
  }

  /**
   * Records the keys' quotas for `status` and the metrics. `redis`: the server's `client` connection;
   * `maxQueuedPages`: page jobs each variant's queue may hold (undefined: no limit).
   */
  static async start(redisUrl: string, redis: RedisClient, keys: readonly ApiKey[], maxQueuedPages: number | undefined): Promise<SubmitAdmission> {
    const quotas = new KeyQuotas(redis);
    await quotas.recordKeys(keys.map(({ name, quota }) => ({ name, quota })));
    return new SubmitAdmission(new QueueCapacity(redisUrl, maxQueuedPages), quotas, keys);
  }

  /**
   * Admits the document for `key`, charging its quotas, or throws: 503 while Redis is short of memory,
   * 429 when its queue is full or a quota is used up (each with Retry-After), 413 for a document with
   * more pages than the key may submit in a day.
   */
  async admit(key: ApiKey, document: DocumentToQueue, now = Date.now()): Promise<Reservation> {
    const room = await this.#capacity.admit(document.variant, document.pageJobs, now);
    if (!room.admitted) {
      throw new HttpError(room.reason === 'redis-memory' ? 503 : 429, room.message, { 'Retry-After': String(room.retryAfterSeconds) });
    }
    const { pagesPerDay } = key.quota;
    if (pagesPerDay !== undefined && document.pages > pagesPerDay) {
      throw new HttpError(413, `${document.uri} has ${document.pages} pages to read, more than this key's quota of ${pagesPerDay} pages a day`);
    }
    const answer = await this.#quotas.admit(key.name, key.quota, document, now);
    if (!answer.admitted) throw quotaExceeded(answer.refusal, document.pages, now);
    return answer.reservation;
  }

  /** Gives back the charges of documents that were admitted but not queued after all. */
  async release(reservations: readonly Reservation[]): Promise<void> {
    for (const reservation of reservations) await this.#quotas.release(reservation);
  }

  /** A cancelled document no longer counts as in flight for the key that submitted it, and its pages never read go back to that key's day. */
  cancelled(docId: string, unreadPages: number): Promise<number> {
    return this.#quotas.cancelDocument(this.#keyNames, docId, unreadPages);
  }

  async capacity(key: ApiKey): Promise<CapacityAnswer> {
    const [{ variants, redis }, usage] = await Promise.all([this.#capacity.report(), this.#quotas.usage(key.name)]);
    return {
      variants,
      redis: { usedMemoryBytes: redis.usedBytes, maxMemoryBytes: redis.maxBytes, accepting: !redis.short },
      key: {
        name: key.name,
        priorityClass: key.quota.priorityClass,
        pagesToday: usage.pagesToday,
        pagesPerDay: key.quota.pagesPerDay ?? null,
        documentsInFlight: usage.documentsInFlight,
        documentsInFlightLimit: key.quota.documentsInFlight ?? null,
        resetsAt: usage.resetsAt,
      },
    };
  }

  close(): Promise<void> {
    return this.#capacity.close();
  }
}

/** 429 naming the quota, its limit, its usage and when it resets; Retry-After: then, or DEFAULT_RETRY_AFTER_SECONDS for documents in flight. */
function quotaExceeded(refusal: QuotaRefusal, pages: number, now: number): HttpError {
  const { quota, limit, usage, resetsAt } = refusal;
  const message =
    quota === 'pages-per-day'
      ? `over this key's quota of ${limit} pages a day: ${usage} were submitted today and this document has ${pages}`
      : `over this key's quota of ${limit} documents in flight: ${usage} are queued or being read`;
  const retryAfter = resetsAt === null ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil((Date.parse(resetsAt) - now) / 1000));
  return new HttpError(429, message, { 'Retry-After': String(retryAfter) }, { quota, limit, usage, resetsAt });
}
