// Workers that cannot grow without bound (`work --max-pages N`, `--max-rss SIZE`): past either limit
// the process asks to be recycled. It then takes no new page, finishes the pages it has taken,
// closes like a stopping worker and exits with EXIT_WORKER_RECYCLED, for its supervisor to start a
// fresh one. Resident memory is read between pages only (process.memoryUsage.rss() is cheap), so a
// worker always reads at least the pages it took before it can be recycled for memory.

/** Exit status of a recycled worker (EX_TEMPFAIL): its supervisor should start a fresh one. */
export const EXIT_WORKER_RECYCLED = 75;

export interface RecycleLimits {
  /** Pages a process reads before it is recycled. Default: no limit. */
  maxPages?: number;
  /** Resident bytes past which the process is recycled, checked as each page job settles. Default: no limit. */
  maxRssBytes?: number;
}

/** Why a worker is being recycled, with the figures, for its log line. */
export interface RecycleReason {
  reason: 'max-pages' | 'max-rss';
  pagesTaken: number;
  rssBytes: number;
  maxPages?: number;
  maxRssBytes?: number;
}

export class WorkerRecycling {
  readonly #limits: RecycleLimits;
  readonly #rss: () => number;
  #pagesTaken = 0;
  #reason: RecycleReason | undefined;
  #requested: (reason: RecycleReason) => void = () => undefined;
  /** Resolves once, when a limit is passed; never without limits. */
  readonly requested: Promise<RecycleReason> = new Promise((resolve) => (this.#requested = resolve));

  /** `rss`: the resident bytes of this process now. */
  constructor(limits: RecycleLimits, rss: () => number = () => process.memoryUsage.rss()) {
    this.#limits = limits;
    this.#rss = rss;
  }

  /**
   * Asked before a claimed page job is read, with its page count: false once the worker is being
   * recycled, and for a job past the page limit; such a job goes back to the queue untried.
   */
  admit(pages: number): boolean {
    if (this.#reason !== undefined) return false;
    this.#pagesTaken += pages;
    const { maxPages } = this.#limits;
    if (maxPages !== undefined && this.#pagesTaken >= maxPages) this.#recycle('max-pages');
    return true;
  }

  /** Called as each page job settles: checks the resident memory. */
  pageSettled(): void {
    const { maxRssBytes } = this.#limits;
    if (this.#reason === undefined && maxRssBytes !== undefined && this.#rss() > maxRssBytes) this.#recycle('max-rss');
  }

  #recycle(reason: RecycleReason['reason']): void {
    this.#reason = { reason, pagesTaken: this.#pagesTaken, rssBytes: this.#rss(), ...this.#limits };
    this.#requested(this.#reason);
  }
}
