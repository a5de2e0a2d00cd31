// Runs tasks either beside each other (shared) or alone: an alone task starts once every running
// task has finished, and nothing else starts until it has finished. Tasks start in arrival order,
// so a waiting alone task is not overtaken by shared ones that arrive after it.

interface Queued {
  alone: boolean;
  start(): void;
}

export class SharedOrAlone {
  readonly #queue: Queued[] = [];
  #running = 0;
  #aloneRunning = false;

  /** Resolves or rejects with `task`'s outcome once it has run in its lane. */
  run<T>(alone: boolean, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        alone,
        start: () => {
          task()
            .then(resolve, reject)
            .finally(() => {
              this.#running -= 1;
              if (alone) this.#aloneRunning = false;
              this.#startDue();
            });
        },
      });
      this.#startDue();
    });
  }

  #startDue(): void {
    while (this.#queue.length > 0 && !this.#aloneRunning) {
      const next = this.#queue[0];
      if (next.alone && this.#running > 0) return;
      this.#queue.shift();
      this.#running += 1;
      this.#aloneRunning = next.alone;
      next.start();
    }
  }
}
