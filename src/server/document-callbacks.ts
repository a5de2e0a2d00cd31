// Callbacks: a submission may name a callback URL, which receives one signed POST when its document
// settles (completed, partial or failed). Registrations live in Redis ({scriptorium}:callback-urls,
// docId -> URL and registration id) so that they outlive the server; deliveries are BullMQ jobs on
// {scriptorium}:callbacks, retried with exponential backoff, one job per registration (its id is the
// job id, so replicas that hear of the same settlement add it once). The body of every try is the
// same; X-Scriptorium-Delivery names the delivery for receivers that must not act twice.
import { createHmac, randomUUID } from 'node:crypto';

import { Queue, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';

import { DOCUMENTS, type QueueName } from '../queue/queue-names.js';
import { connectRedis, type RedisClient, redisOptions } from '../queue/redis.js';
import type { DocumentStatus } from './api-types.js';
import type { DocumentEvents } from './document-events.js';
import { isSettled } from './document-status.js';
import { HttpError } from './http-error.js';

const CALLBACKS: QueueName = { prefix: DOCUMENTS.prefix, name: 'callbacks' };
const REGISTRY_KEY = `${DOCUMENTS.prefix}:callback-urls`;
const DELIVERY_TIMEOUT_MS = 10_000;
const HOUR_S = 3600;

export const SIGNATURE_HEADER = 'x-scriptorium-signature';
export const DELIVERY_HEADER = 'x-scriptorium-delivery';

export interface CallbackSettings {
  /** Hosts callback URLs may point at (lowercase). */
  hosts: readonly string[];
  /** HMAC-SHA256 key of the signature; never logged. */
  secret: string;
  /** Tries per delivery. Default 10. */
  attempts?: number;
  /** Wait before the second try, doubled for each further one. Default 2 s. */
  backoffMs?: number;
}

/** The body of a callback POST. */
export interface CallbackBody {
  event: 'document.settled';
  status: DocumentStatus;
}

interface Registration {
  url: string;
  id: string;
}

interface DeliveryJob {
  docId: string;
  registrationId: string;
  url: string;
  body: string;
}

/** `sha256=<hex HMAC-SHA256 of the body>`, as X-Scriptorium-Signature carries it. */
export function callbackSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export class DocumentCallbacks {
  readonly #redis: RedisClient;
  readonly #queue: Queue<DeliveryJob>;
  readonly #worker: Worker<DeliveryJob>;
  readonly #unlisten: () => void;

  private constructor(
    redisUrl: string,
    readonly settings: CallbackSettings,
    private readonly statusOf: (docId: string) => Promise<DocumentStatus | undefined>,
    events: DocumentEvents,
    private readonly logger: Logger,
  ) {
    this.#redis = connectRedis(redisOptions(redisUrl, 'client'));
    this.#redis.on('error', () => undefined); // the server's health connection reports outages
    this.#queue = new Queue(CALLBACKS.name, { connection: redisOptions(redisUrl, 'client'), prefix: CALLBACKS.prefix });
    this.#queue.on('error', () => undefined);
    this.#worker = new Worker<DeliveryJob>(CALLBACKS.name, (job) => this.#deliver(job), {
      connection: redisOptions(redisUrl, 'worker'),
      prefix: CALLBACKS.prefix,
      concurrency: 8,
    });
    this.#worker.on('error', (error) => logger.error({ err: error }, 'callback worker: queue error'));
    this.#worker.on('failed', (job, error) => void this.#onFailed(job, error));
    this.#unlisten = events.listen((docId, event) => {
      if (event === 'document-settled') this.#deliverIfSettled(docId).catch((error: unknown) => logger.error({ err: error, docId }, 'cannot queue a callback'));
    });
  }

  /** Starts delivering, and queues the callbacks of documents that settled while no server listened. */
  static async start(options: {
    redisUrl: string;
    settings: CallbackSettings;
    statusOf: (docId: string) => Promise<DocumentStatus | undefined>;
    events: DocumentEvents;
    logger: Logger;
  }): Promise<DocumentCallbacks> {
    const callbacks = new DocumentCallbacks(options.redisUrl, options.settings, options.statusOf, options.events, options.logger);
    await callbacks.#worker.waitUntilReady();
    for (const docId of await callbacks.#redis.hkeys(REGISTRY_KEY)) await callbacks.#deliverIfSettled(docId);
    return callbacks;
  }

  /** The callback URL of a submission, checked: http(s) to an allowed host. */
  checkUrl(value: unknown): string {
    let url: URL;
    try {
      url = new URL(String(value));
    } catch {
      throw new HttpError(400, '"callbackUrl" must be an absolute http(s) URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new HttpError(400, `"callbackUrl" must use https or http (got ${url.protocol})`);
    if (!this.settings.hosts.includes(url.hostname.toLowerCase())) {
      throw new HttpError(403, `this server sends no callbacks to ${url.hostname}: its SCRIPTORIUM_CALLBACK_HOSTS does not list that host`);
    }
    return url.href;
  }

  /** Registers `url` for the document's settlement (replacing an earlier one); a document settled already is called back at once. */
  async register(docId: string, url: string): Promise<void> {
    const registration: Registration = { url, id: randomUUID() };
    await this.#redis.hset(REGISTRY_KEY, docId, JSON.stringify(registration));
    await this.#deliverIfSettled(docId);
  }

  async close(): Promise<void> {
    this.#unlisten();
    await this.#worker.close();
    await this.#queue.close();
    this.#redis.disconnect();
  }

  async #deliverIfSettled(docId: string): Promise<void> {
    const registration = await this.#registration(docId);
    if (registration === undefined) return;
    const status = await this.statusOf(docId);
    if (status === undefined || !isSettled(status)) return;
    const body: CallbackBody = { event: 'document.settled', status };
    const { attempts = 10, backoffMs = 2_000 } = this.settings;
    await this.#queue.add(
      'callback',
      { docId, registrationId: registration.id, url: registration.url, body: JSON.stringify(body) },
      {
        jobId: `${docId}.${registration.id}`,
        attempts,
        backoff: { type: 'exponential', delay: backoffMs },
        removeOnComplete: { age: HOUR_S },
        removeOnFail: { age: 7 * 24 * HOUR_S },
      },
    );
  }

  async #deliver(job: Job<DeliveryJob>): Promise<void> {
    const { docId, url, body } = job.data;
    const response = await fetch(url, {
      method: 'POST',
      redirect: 'error',
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: callbackSignature(this.settings.secret, body), [DELIVERY_HEADER]: job.id ?? '' },
      body,
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`the callback URL answered ${response.status}`);
    await this.#forget(docId, job.data.registrationId);
    this.logger.info({ docId, attempt: job.attemptsMade + 1 }, 'callback delivered');
  }

  async #onFailed(job: Job<DeliveryJob> | undefined, error: Error): Promise<void> {
    if (job === undefined) return;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    this.logger[final ? 'error' : 'warn']({ docId: job.data.docId, attempt: job.attemptsMade, err: error.message }, final ? 'callback given up' : 'callback failed; retrying');
    if (final) await this.#forget(job.data.docId, job.data.registrationId);
  }

  /** Removes the registration, unless a newer one replaced it meanwhile. */
  async #forget(docId: string, registrationId: string): Promise<void> {
    if ((await this.#registration(docId))?.id === registrationId) await this.#redis.hdel(REGISTRY_KEY, docId);
  }

  async #registration(docId: string): Promise<Registration | undefined> {
    const value = await this.#redis.hget(REGISTRY_KEY, docId);
    return value === null ? undefined : (JSON.parse(value) as Registration);
  }
}
