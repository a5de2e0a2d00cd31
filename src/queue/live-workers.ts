// Live workers: each worker process keeps one hash in Redis, rewritten by a heartbeat and expiring
// a few heartbeats after the last one, so a worker that dies drops out of the list on its own and one
// that closes removes its hash at once. `scriptorium status` lists them.
import { randomBytes } from 'node:crypto';


import { DOCUMENTS } from './queue-names.js';
import { scanKeys, type RedisClient } from './redis.js';

/** {scriptorium}:workers:<host>:<pid>:<random> */
export const LIVE_WORKER_KEY_PREFIX = `${DOCUMENTS.prefix}:workers:`;
export const DEFAULT_HEARTBEAT_MS = 5_000;
/** A worker's hash outlives its last heartbeat by this many intervals. */
const TTL_IN_HEARTBEATS = 3;

/** What a worker says about itself (times in ms since the epoch). */
export interface LiveWorker {
  host: string;
  pid: number;
  /** The backend and device, as in page results: 'cpu-avx2', 'vulkan:NVIDIA H200'. */
  backend: string;
  threads: number;
  variant: string;
  /** 'sha256:…' of the loaded checkpoint. */
  checkpoint: string;
  /** Page job ids it holds now. */
  currentJobs: string[];
  pagesDone: number;
  /** Pages it failed for good (no tries left). */
  pagesFailed: number;
  startedAt: number;
  lastHeartbeat: number;
}

export type LiveWorkerIdentity = Pick<LiveWorker, 'host' | 'pid' | 'backend' | 'threads' | 'variant' | 'checkpoint' | 'startedAt'>;
export type LiveWorkerProgress = Pick<LiveWorker, 'currentJobs' | 'pagesDone' | 'pagesFailed'>;

export interface LiveWorkerHeartbeatOptions {
  /** Default DEFAULT_HEARTBEAT_MS. */
  intervalMs?: number;
  /** A heartbeat that could not be written (Redis unreachable); the next one tries again. */
  onError?: (error: unknown) => void;
}

export class LiveWorkerHeartbeat {
  readonly key: string;
  readonly #redis: RedisClient;
  readonly #identity: LiveWorkerIdentity;
  readonly #progress: () => LiveWorkerProgress;
  readonly #intervalMs: number;
  readonly #timer: NodeJS.Timeout;
  readonly #onError: (error: unknown) => void;
  #beating: Promise<void> | undefined;

  private constructor(redis: RedisClient, identity: LiveWorkerIdentity, progress: () => LiveWorkerProgress, options: LiveWorkerHeartbeatOptions) {
    this.key = `${LIVE_WORKER_KEY_PREFIX}${identity.host}:${identity.pid}:${randomBytes(3).toString('hex')}`;
    this.#redis = redis;
    this.#identity = identity;
    this.#progress = progress;
    this.#intervalMs = options.intervalMs ?? DEFAULT_HEARTBEAT_MS;
    this.#onError = options.onError ?? (() => undefined);
    this.#timer = setInterval(() => this.#beat(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Registers the worker (resolves once its hash is written) and keeps it registered until stop(). */
  static async start(
    redis: RedisClient,
    identity: LiveWorkerIdentity,
    progress: () => LiveWorkerProgress,
    options: LiveWorkerHeartbeatOptions = {},
  ): Promise<LiveWorkerHeartbeat> {
    const heartbeat = new LiveWorkerHeartbeat(redis, identity, progress, options);
    await heartbeat.#write();
    return heartbeat;
  }

  /** Stops the heartbeat and removes the worker's hash. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#beating;
    await this.#redis.del(this.key);
  }

  #beat(): void {
    // A beat still waiting for an unreachable Redis is not joined by another.
    if (this.#beating !== undefined) return;
    this.#beating = this.#write()
      .catch(this.#onError)
      .finally(() => {
        this.#beating = undefined;
      });
  }

  async #write(): Promise<void> {
    const progress = this.#progress();
    const fields: Record<keyof LiveWorker, string> = {
      host: this.#identity.host,
      pid: String(this.#identity.pid),
      backend: this.#identity.backend,
      threads: String(this.#identity.threads),
      variant: this.#identity.variant,
      checkpoint: this.#identity.checkpoint,
      currentJobs: JSON.stringify(progress.currentJobs),
      pagesDone: String(progress.pagesDone),
      pagesFailed: String(progress.pagesFailed),
      startedAt: String(this.#identity.startedAt),
      lastHeartbeat: String(Date.now()),
    };
    await this.#redis.multi().hset(this.key, fields).pexpire(this.key, TTL_IN_HEARTBEATS * this.#intervalMs).exec();
  }
}

/** Every registered worker, ordered by host and pid. */
export async function listLiveWorkers(redis: RedisClient): Promise<LiveWorker[]> {
  const keys = await scanKeys(redis, `${LIVE_WORKER_KEY_PREFIX}*`);
  const hashes = await Promise.all(keys.map((key) => redis.hgetall(key)));
  return hashes
    .filter((hash) => hash.host !== undefined) // expired between SCAN and HGETALL
    .map(
      (hash): LiveWorker => ({
        host: hash.host,
        pid: Number(hash.pid),
        backend: hash.backend ?? '',
        threads: Number(hash.threads),
        variant: hash.variant ?? '',
        checkpoint: hash.checkpoint ?? '',
        currentJobs: parseJobIds(hash.currentJobs),
        pagesDone: Number(hash.pagesDone),
        pagesFailed: Number(hash.pagesFailed),
        startedAt: Number(hash.startedAt),
        lastHeartbeat: Number(hash.lastHeartbeat),
      }),
    )
    .sort((a, b) => a.host.localeCompare(b.host) || a.pid - b.pid);
}

function parseJobIds(text: string | undefined): string[] {
  try {
    const ids: unknown = JSON.parse(text ?? '[]');
    return Array.isArray(ids) ? ids.map(String) : [];
  } catch {
    return [];
  }
}
