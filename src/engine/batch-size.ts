// How many pages decode together (`--batch N|auto`). `auto`, the default, takes the largest batch
// that still pays on the backend, measured with the bench's throughput part at real page lengths
// (bench/RESULTS.md), and leaves memory to the admission rule (device-memory.ts): a page joins only
// while its KV cache's bound fits what is left, so a batch of long V1 pages holds fewer pages at
// once than one of V3 pages, whose R-SWA caches stay small, and memory never runs out.
export type BatchSize = number | 'auto';

export interface ResolvedBatch {
  size: number;
  /** Why this size, for the worker's log. */
  why: string;
}

/** `auto` per backend, from the throughput part's measurements (bench/RESULTS.md, "Throughput at real page lengths"). */
export const AUTO_BATCH: Readonly<Record<'cpu' | 'vulkan', ResolvedBatch>> = {
  cpu: {
    size: 32,
    why: 'auto: on a 2-core CPU a full batch of 32 read 1.44 times the pages per hour of 16 at 1,000 tokens a page; memory admits each page',
  },
  vulkan: {
    size: 64,
    why: 'auto: a GPU batch is sized for 64 pages, the most the throughput part measures; device memory admits each page',
  },
};

export function resolveBatchSize(batch: BatchSize, backend: 'cpu' | 'vulkan'): ResolvedBatch {
  if (batch === 'auto') return AUTO_BATCH[backend];
  return { size: batch, why: 'given' };
}

/**
 * Pages a reader holds for a batch of `batch` places: twice as many, so that while the batch decodes
 * the next pages are fetched, rendered and encoded, ready to join.
 */
export function pagesInHand(batch: number): number {
  return 2 * batch;
}

/** `--batch`: a positive integer or `auto`; undefined when the text is neither. */
export function parseBatchSize(text: string): BatchSize | undefined {
  if (text === 'auto') return 'auto';
  return /^[1-9]\d*$/.test(text) ? Number(text) : undefined;
}
