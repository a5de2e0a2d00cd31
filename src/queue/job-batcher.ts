// Collects jobs that a worker claimed concurrently into batches, and runs one batch at a time: a
// batch starts once `maxBatch` items are waiting, or once the oldest has waited `windowMs`, and only
// when the previous batch has finished. Items that arrive during a run form the next batch, so a
// busy worker always starts with a full one. An item submitted `alone` runs in a batch of its own.

export interface JobBatcherOptions {
  /** Most items per run. Default 4. */
  maxBatch?: number;
  /** How long the first item of a batch waits for others. Default 5 ms. */
  windowMs?: number;
}

interface Waiting<I, O> {
  item: I;
  alone: boolean;
  /** performance.now() when it was submitted. */
  at: number;
  resolve(value: O): void;
  reject(error: unknown): void;
}

/** `run` receives up to maxBatch items and resolves with one result per item, in item order. */
export type BatchRunner<I, O> = (items: I[]) => Promise<O[]>;

export class JobBatcher<I, O> {
  readonly #run: BatchRunner<I, O>;
  readonly #maxBatch: number;
  readonly #windowMs: number;
  readonly #waiting: Waiting<I, O>[] = [];
  #running = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(run: BatchRunner<I, O>, options: JobBatcherOptions = {}) {
    this.#run = run;
    this.#maxBatch = options.maxBatch ?? 4;
    this.#windowMs = options.windowMs ?? 5;
    if (!(Number.isInteger(this.#maxBatch) && this.#maxBatch >= 1)) throw new RangeError(`maxBatch must be an integer >= 1, got ${this.#maxBatch}`);
    if (!(this.#windowMs >= 0)) throw new RangeError(`windowMs must be >= 0, got ${this.#windowMs}`);
  }

  /**
   * Resolves with this item's result once the batch it joined has run; rejects if that run rejects.
   * `alone`: run it in a batch of its own, neither waiting for others nor joined by them.
   */
  submit(item: I, options: { alone?: boolean } = {}): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, alone: options.alone ?? false, at: performance.now(), resolve, reject });
      this.#startIfDue();
    });
  }

  #startIfDue(): void {
    if (this.#running || this.#waiting.length === 0) return;
    const first = this.#waiting[0];
    const waited = performance.now() - first.at;
    if (!first.alone && this.#waiting.length < this.#maxBatch && waited < this.#windowMs) {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        this.#startIfDue();
      }, this.#windowMs - waited);
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = true;
    void this.#runBatch(this.#waiting.splice(0, this.#batchLength()));
  }

  /** The waiting items of the next batch: the first alone, or the leading items up to the first that runs alone. */
  #batchLength(): number {
    if (this.#waiting[0].alone) return 1;
    const firstAlone = this.#waiting.findIndex((waiting) => waiting.alone);
    return Math.min(this.#maxBatch, firstAlone === -1 ? this.#waiting.length : firstAlone);
  }

  async #runBatch(batch: Waiting<I, O>[]): Promise<void> {
    try {
      const results = await this.#run(batch.map((waiting) => waiting.item));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} items returned ${results.length} results`);
      batch.forEach((waiting, i) => waiting.resolve(results[i]));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      this.#running = false;
      this.#startIfDue();
    }
  }
}
