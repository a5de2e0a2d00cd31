// A worker process's health, as its supervisor (Kubernetes probes, compose healthchecks) asks for it
// on the metrics port:
// - /healthz (liveness): the process answers and its event loop is responsive: no stall longer than
//   the limit within the last window. A loop that is blocked right now cannot answer at all, and the
//   probe's own timeout fails it.
// - /readyz (readiness): the model is loaded and the workers take jobs, Redis answers PING, and the
//   process is not stopping.
import type { Logger } from 'pino';

import { RedisHealthProbe, type RedisHealth } from '../queue/redis-health.js';

/** How often the event loop's responsiveness is sampled. */
const TICK_MS = 250;
/** A stall counts against liveness this long after it ended. */
const STALL_WINDOW_MS = 30_000;
/** A stall longer than this makes /healthz fail (inference runs off the loop: even a slow page stays far below). */
export const DEFAULT_EVENT_LOOP_LIMIT_MS = 10_000;

export type ModelState = 'loading' | 'loaded' | 'stopping';

export interface HealthAnswer {
  /** 200 or 503. */
  status: number;
  body: Record<string, string | number>;
}

export interface WorkerHealthOptions {
  redisUrl: string;
  logger: Logger;
  /** Default DEFAULT_EVENT_LOOP_LIMIT_MS. */
  eventLoopLimitMs?: number;
}

export class WorkerHealth {
  readonly #redis: RedisHealthProbe;
  readonly #limitMs: number;
  readonly #ticker: NodeJS.Timeout;
  #model: ModelState = 'loading';
  #lastTick = performance.now();
  #worstStallMs = 0;
  #worstStallAt = 0;

  private constructor(redis: RedisHealthProbe, limitMs: number) {
    this.#redis = redis;
    this.#limitMs = limitMs;
    this.#ticker = setInterval(() => this.#tick(), TICK_MS);
    this.#ticker.unref();
  }

  static async start(options: WorkerHealthOptions): Promise<WorkerHealth> {
    return new WorkerHealth(await RedisHealthProbe.open(options.redisUrl, options.logger), options.eventLoopLimitMs ?? DEFAULT_EVENT_LOOP_LIMIT_MS);
  }

  /** The engine is loaded and the workers take jobs. */
  modelLoaded(): void {
    if (this.#model === 'loading') this.#model = 'loaded';
  }

  /** The process is shutting down: finishing its jobs, taking no new ones. */
  stopping(): void {
    this.#model = 'stopping';
  }

  liveness(): HealthAnswer {
    this.#tick();
    const recent = performance.now() - this.#worstStallAt <= STALL_WINDOW_MS ? this.#worstStallMs : 0;
    const responsive = recent <= this.#limitMs;
    return {
      status: responsive ? 200 : 503,
      body: { eventLoop: responsive ? 'ok' : 'stalled', worstStallMs: Math.round(recent), limitMs: this.#limitMs },
    };
  }

  async readiness(): Promise<HealthAnswer> {
    const redis: RedisHealth = await this.#redis.ping();
    const ready = this.#model === 'loaded' && redis === 'ok';
    return { status: ready ? 200 : 503, body: { model: this.#model, redis } };
  }

  close(): void {
    clearInterval(this.#ticker);
    this.#redis.close();
  }

  /** How late this sample is beyond its interval is how long the loop was stalled. */
  #tick(): void {
    const now = performance.now();
    const stallMs = now - this.#lastTick - TICK_MS;
    this.#lastTick = now;
    if (stallMs <= 0) return;
    if (stallMs >= this.#worstStallMs || now - this.#worstStallAt > STALL_WINDOW_MS) {
      this.#worstStallMs = stallMs;
      this.#worstStallAt = now;
    }
  }
}
