// How many pages decode together (`--batch N|auto`). `auto`, the default: on the CPU, the largest
// batch that still pays, measured with the bench's throughput part at real page lengths
// (bench/RESULTS.md); on a GPU, the pages of a planned size whose KV caches fit the device memory
// left after the weights (docs/engine.md, "Device memory"), up to GPU_BATCH_CAP. Either way the
// admission rule (device-memory.ts) has the last word: a page joins only while its KV cache's bound
// fits what is left, so a batch of long V1 pages holds fewer pages at once than one of V3 pages,
// whose R-SWA caches stay small, and memory never runs out.
import type { ModelConfig } from './model-config.js';
import { ACTIVATION_RESERVE_BYTES, kvCacheBoundBytes, PLANNED_NEW_TOKENS } from './device-memory.js';
import { imageTokenCount } from './image-tokens.js';
import type { DeviceMemory, KvCacheDtype } from './native-binding.js';

export type BatchSize = number | 'auto';

export interface ResolvedBatch {
  size: number;
  /** Why this size, for the worker's log. */
  why: string;
}

/** `auto` on the CPU, from the throughput part's measurements (bench/RESULTS.md, "Throughput at real page lengths"). */
export const AUTO_CPU_BATCH: ResolvedBatch = {
  size: 32,
  why:
    'auto: on a 2-core CPU a full batch of 32 read 1.42 times the pages per hour of 8 at 1,000 tokens a page; one of 64 read ' +
    'more, but its 300 ms steps bring a page of 2,000 tokens to the 10-minute page timeout; memory admits each page',
};

/**
 * The page `auto` plans a GPU batch for: an A4 page in gundam mode (the default), a global view and
 * 2 × 3 tiles, that generates 1,000 tokens, about what a real page does.
 */
export const PLANNED_PAGE = { grid: [2, 3] as const, newTokens: PLANNED_NEW_TOKENS };
/** The prompt's text around the image tokens (BOS, the task's words), rounded up. */
const PROMPT_TEXT_TOKENS = 16;
/**
 * The most pages `auto` plans a GPU batch for. Decode reads the weights once a step for the whole
 * batch but each page's KV cache for itself, so beyond the batch whose caches weigh as much as the
 * weights (about 40 V1 pages of 1,000 tokens) more pages add less and less (docs/engine.md).
 */
export const GPU_BATCH_CAP = 256;

/** The KV cache bound of one planned page (`kvCacheBoundBytes`). */
export function plannedPageCacheBytes(config: ModelConfig, kvCache: KvCacheDtype): number {
  const promptTokens = imageTokenCount(config.variant, 'gundam', PLANNED_PAGE.grid) + PROMPT_TEXT_TOKENS;
  return kvCacheBoundBytes(config.decoder, kvCache, promptTokens, PLANNED_PAGE.newTokens);
}

/**
 * `auto` on a GPU: the planned pages whose caches fit the device's budget less what its buffers
 * hold now (the weights, once loaded) and the activations' reserve, at least 1, at most GPU_BATCH_CAP.
 */
export function planGpuBatch(memory: DeviceMemory, pageCacheBytes: number): ResolvedBatch {
  const room = memory.budgetBytes - memory.usedBytes - ACTIVATION_RESERVE_BYTES;
  const fits = Math.max(0, Math.floor(room / pageCacheBytes));
  const size = Math.min(GPU_BATCH_CAP, Math.max(1, fits));
  const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  return {
    size,
    why:
      `auto: ${gib(Math.max(0, room))} of device memory left after the weights and a ${gib(ACTIVATION_RESERVE_BYTES)} activation reserve ` +
      `holds the KV caches of ${fits} planned pages (gundam, 2 x 3 tiles, ${PLANNED_PAGE.newTokens} tokens: ${(pageCacheBytes / 2 ** 20).toFixed(0)} MiB each)` +
      (fits > GPU_BATCH_CAP ? `, capped at ${GPU_BATCH_CAP}` : fits < 1 ? ', so 1' : '') +
      '; memory admits each page',
  };
}

/** The batch for `batch` on a model: a given size, or `auto` for its backend (a GPU model has its device memory, the CPU none). */
export function resolveBatchSize(batch: BatchSize, model: { config: ModelConfig; kvCache: KvCacheDtype; deviceMemory: DeviceMemory | null }): ResolvedBatch {
  if (batch !== 'auto') return { size: batch, why: 'given' };
  if (model.deviceMemory === null) return AUTO_CPU_BATCH;
  return planGpuBatch(model.deviceMemory, plannedPageCacheBytes(model.config, model.kvCache));
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
