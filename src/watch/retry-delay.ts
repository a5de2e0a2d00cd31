// How long a source waits before trying again after a failure (Redis, S3 or SQS unreachable):
// doubling from one second up to half a minute, back to one second after a success.
import { setTimeout as sleep } from 'node:timers/promises';

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;

export class RetryDelay {
  #next = FIRST_DELAY_MS;

  /** Waits nextMs (less if `signal` aborts), then doubles nextMs. */
  async wait(signal: AbortSignal): Promise<void> {
    const delay = this.#next;
    this.#next = Math.min(2 * delay, MAX_DELAY_MS);
    await sleep(delay, undefined, { signal }).catch(() => undefined);
  }

  /** The next wait is the shortest again. */
  reset(): void {
    this.#next = FIRST_DELAY_MS;
  }

  /** What the next wait() waits, for log lines. */
  get nextMs(): number {
    return this.#next;
  }
}
