// Bounded concurrency that keeps the order: the one way a producer or worker runs many independent
// storage- or queue-bound steps at once.

/**
 * `map` over `items`, at most `limit` running at once, yielding each result in the items' order as
 * soon as it and every one before it are done. A rejection is thrown in its turn, and no item is
 * started after it; whenever the loop ends early, the steps already started are waited for first,
 * so nothing runs on after the caller has closed what they use.
 */
export async function* mapInOrder<T, R>(items: AsyncIterable<T> | Iterable<T>, limit: number, map: (item: T, index: number) => Promise<R>): AsyncGenerator<R> {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new Error(`mapInOrder: limit must be a whole number of at least 1 (got ${limit})`);
  const running: Promise<R>[] = [];
  let index = 0;
  try {
    for await (const item of items) {
      const step = map(item, index++);
      step.catch(() => undefined); // its rejection is thrown in its turn below, not reported as unhandled now
      running.push(step);
      if (running.length >= limit) yield await running.shift()!;
    }
    while (running.length > 0) yield await running.shift()!;
  } finally {
    await Promise.allSettled(running);
  }
}
