// Which sequences fit the engine's memory together: a GPU's device memory budget, or on the CPU
// what this process may hold. The native GPU device counts every buffer against its budget and
// refuses one that does not fit, failing only the forward call that needed it; on the CPU the
// process would be killed. This plan keeps the continuous batch below the budget, so that a page
// waits for room rather than fail, and a page that can never fit fails at once with the numbers.
import { memoryLimit } from './cgroup-limits.js';
import type { DecoderDims } from './model-config.js';
import type { DeviceMemory, KvCacheDtype } from './native-binding.js';

/** The environment variable that caps the GPU budget, in MiB (native/vulkan/device.h). */
export const GPU_MEMORY_CAP_VARIABLE = 'SCRIPTORIUM_GPU_MEMORY_MB';
/** The environment variable that caps the CPU engine's memory, in MiB (default: the machine's, or the cgroup's limit). */
export const HOST_MEMORY_CAP_VARIABLE = 'SCRIPTORIUM_MEMORY_MB';
/**
 * Memory kept out of a budget for what a call holds only while it runs: a page's vision activations
 * (a V3 gundam page sends 30 tiles through SAM at once, about 2 GB) and a prefill's. The CPU budget
 * leaves it out (hostMemory); a GPU batch is planned without it (batch-size.ts).
 */
export const ACTIVATION_RESERVE_BYTES = 2 * 2 ** 30;

/** memoryLimit(), read once: the cgroup files are not read again for every page that joins. */
let processMemoryLimit: number | undefined;

/**
 * The CPU engine's memory as a budget: what the process may hold (the machine's memory, the
 * cgroup's limit and HOST_MEMORY_CAP_VARIABLE, whichever is least) less the activation reserve, and
 * what it holds now (its resident set: weights, KV caches, everything else).
 */
export function hostMemory(env: NodeJS.ProcessEnv = process.env): DeviceMemory {
  processMemoryLimit ??= memoryLimit();
  const cap = Number(env[HOST_MEMORY_CAP_VARIABLE]);
  const limit = cap > 0 ? Math.min(processMemoryLimit, cap * 2 ** 20) : processMemoryLimit;
  return { budgetBytes: limit - ACTIVATION_RESERVE_BYTES, usedBytes: process.memoryUsage.rss() };
}

/** Slots the growth of a KV cache adds at least (as the native caches grow: 256 slots, or half again). */
const CACHE_GROWTH_SLOTS = 256;

/**
 * Tokens a page is planned to generate, about what a real page does. With full attention a sequence
 * is admitted for this many (or for what it has generated, once more), not for its whole limit: one
 * that outgrows the memory is preempted and reads again later (generate.ts), so a batch is not held
 * to a few pages by limits that real pages seldom approach.
 */
export const PLANNED_NEW_TOKENS = 1000;

/**
 * Bytes of one KV cache slot on the device: the key and value rows of every layer, in F32, or in
 * IEEE half with each row padded to an even count of halves (native/vulkan/gpu_decoder.h).
 */
export function kvSlotBytes(dims: DecoderDims, kvCache: KvCacheDtype): number {
  const width = dims.kvHeads * dims.headDim;
  const rowBytes = kvCache === 'f32' ? 4 * width : 2 * (width + (width % 2));
  return 2 * dims.layers * rowBytes;
}

/**
 * The most bytes the KV cache of a sequence of `promptTokens` plus `newTokens` can reach on the device.
 * It stores at most promptTokens + newTokens slots (max_position_embeddings at most; with R-SWA the
 * prompt plus the window); growing by 256 slots or half again, its capacity stays within
 * max(slots + 256, 1.5 × slots), and within that same limit.
 */
export function kvCacheBoundBytes(dims: DecoderDims, kvCache: KvCacheDtype, promptTokens: number, newTokens: number): number {
  let limit = dims.maxPositions;
  if (dims.slidingWindow > 0) limit = Math.min(limit, promptTokens + dims.slidingWindow);
  const slots = Math.min(promptTokens + newTokens, limit);
  return Math.min(limit, Math.max(slots + CACHE_GROWTH_SLOTS, Math.ceil(1.5 * slots))) * kvSlotBytes(dims, kvCache);
}

/**
 * The bytes a cache of `cacheBytes` holds while a call appends `newTokens` to its `length` tokens:
 * the same when they fit, else the grown buffer beside the old one, which the copy holds both of.
 * The growth rule is the native caches' (native/common/kv_slot_rules.h grown_capacity), for full
 * attention.
 */
export function cacheBytesDuringCall(dims: DecoderDims, kvCache: KvCacheDtype, cacheBytes: number, length: number, newTokens: number): number {
  const slotBytes = kvSlotBytes(dims, kvCache);
  const capacity = Math.floor(cacheBytes / slotBytes);
  const rows = length + newTokens;
  if (rows <= capacity) return cacheBytes;
  const grown = Math.max(rows, Math.min(Math.max(rows + CACHE_GROWTH_SLOTS, capacity + Math.floor(capacity / 2)), dims.maxPositions));
  return cacheBytes + grown * slotBytes;
}

/** A sequence in the batch: the bound of its cache, and the bytes its cache holds now. */
export interface BatchedCache {
  boundBytes: number;
  cacheBytes: number;
}

/** join: it fits beside the batch; wait: it fits once others leave; never: it does not fit even alone. */
export type Admission = 'join' | 'wait' | 'never';

/**
 * The admission rule. Of the budget, the buffers other than KV caches (weights, activations, staging)
 * take what they hold now; a sequence joins when its cache's bound and those of the caches in the
 * batch fit in the rest. (A longer prompt than any before may still need more activation memory: if
 * that does not fit, the device refuses it and only that sequence's call fails.)
 */
export function admission(memory: DeviceMemory, batch: readonly BatchedCache[], boundBytes: number): Admission {
  const room = roomForCaches(memory, batch);
  if (boundBytes > room) return 'never';
  const promised = batch.reduce((sum, member) => sum + member.boundBytes, 0);
  return promised + boundBytes <= room ? 'join' : 'wait';
}

/**
 * Whether the next call fits: `duringCallBytes` of each cache (cacheBytesDuringCall) within the
 * budget less what the buffers other than the caches hold now.
 */
export function callFits(memory: DeviceMemory, batch: readonly { cacheBytes: number; duringCallBytes: number }[]): boolean {
  return batch.reduce((sum, member) => sum + member.duringCallBytes, 0) <= roomForCaches(memory, batch);
}

/** The budget less what the buffers other than the batch's KV caches hold now. */
function roomForCaches(memory: DeviceMemory, batch: readonly { cacheBytes: number }[]): number {
  return memory.budgetBytes - (memory.usedBytes - batch.reduce((sum, member) => sum + member.cacheBytes, 0));
}

/** The error of a sequence that can never fit: the page fails with it and nothing else does. */
export function doesNotFitError(backend: string, memory: DeviceMemory, batch: readonly BatchedCache[], tokens: number, boundBytes: number): Error {
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  const room = roomForCaches(memory, batch);
  const onGpu = backend.startsWith('vulkan');
  const budget = onGpu
    ? `${GPU_MEMORY_CAP_VARIABLE} caps the budget; 90% of the device's memory without it`
    : `the memory this process may hold (the machine's, its cgroup's limit or ${HOST_MEMORY_CAP_VARIABLE}) less ${mib(ACTIVATION_RESERVE_BYTES)} kept for activations`;
  return new Error(
    `out of ${onGpu ? 'device ' : ''}memory on ${backend}: the KV cache of ${tokens} tokens needs up to ${mib(boundBytes)}, and the ` +
      `${mib(memory.budgetBytes)} budget leaves ${mib(room)} beside the weights and activations (${budget})`,
  );
}
