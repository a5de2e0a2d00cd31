// The native addon (build/Release/scriptorium_native.node): loading it, and the types of what it takes
// and returns: the CPU and GPU model handles, their sequences and forward passes, encoded views, the
// GPU devices and their memory, safetensors headers. Every engine module that talks to the addon
// imports it from here; native-model.ts wraps the model handles.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Precision } from './precision.js';
import type { VisionDims } from './vision-config.js';

/** A KV cache owned by the native engine. Its first forward calls read the prompt (the prefill). */
export interface NativeSequence {
  /** Tokens consumed so far (= the next absolute position). */
  readonly length: number;
  /** Tokens of the prompt (the R-SWA prefix for V3): the first call's, or the promptTokens it named; -1 before it. */
  readonly prefixLength: number;
  readonly cacheBytes: number;
  /** Frees the cache now; the sequence cannot be used afterwards. */
  release(): void;
}

/** One sequence's new tokens. embeds[embedRows.length, hidden] replace the embeddings at embedRows. */
export interface ForwardInput {
  sequence: NativeSequence;
  ids: Int32Array;
  embeds?: Float32Array;
  embedRows?: Int32Array;
  /** Return the full logits[vocab] of the last new token (default true); the argmax comes either way. */
  logits?: boolean;
  /** Ids the returned argmax skips (the no-repeat-n-gram bans, say). */
  banned?: Int32Array;
  /**
   * The whole prompt's length when the sequence's first call holds only its start (a prefill in
   * chunks: later calls bring the rest, several tokens each), or, with full attention, more than the
   * prompt (a preempted sequence reading its generated ids again: those attend as decode steps do);
   * default: the first call's tokens.
   */
  promptTokens?: number;
}

/**
 * One input's result: the argmax over its ids not banned, its log-probability (the log-softmax of the
 * logits over the whole vocabulary, banned ids included, at `best`), and its logits[vocab] when asked.
 */
export interface ForwardOutput {
  best: number;
  logprob: number;
  logits?: Float32Array;
}

/**
 * What a forward call of the addon resolves with: one best id and log-probability per input, the
 * logits rows asked for, and the call's own time on the engine (waits for other calls left out).
 */
export interface NativeForwardResult {
  best: Int32Array;
  logprob: Float32Array;
  logits: Float32Array;
  computeMs: number;
}

/**
 * Options of the CPU model's forward call. encodeMs: the milliseconds image encodes may then take,
 * layer by layer, before a forward call that waits goes first (default: no limit; docs/engine.md
 * "Joining pages").
 */
export interface ForwardOptions {
  encodeMs?: number;
}

/** Encoded views of one side. Shapes in PyTorch order; every array is row-major F32. */
export interface EncodedViews {
  /** [n, tokensPerView, embed]: the projector outputs that replace the image tokens. */
  projected: Float32Array;
  tokensPerView: number;
  /** [n, C, h, w] (official NCHW layout), h · w = tokensPerView; only with keepIntermediates. */
  sam?: Float32Array;
  samShape?: number[];
  /** CLIP output [n, tokensPerView, width] (CLS dropped) or Qwen2 query outputs [n, tokensPerView, dim]; only with keepIntermediates. */
  encoder?: Float32Array;
}

/** Wall time of each vision stage of one encodeImages call, in milliseconds. */
export interface VisionStageTimes {
  sam: number;
  /** CLIP (V1/V3) or the Qwen2 encoder (V2). */
  encoder: number;
  /** Projector input assembly and the projector. */
  projector: number;
}

/** What one encodeImages call returns: its views and the time each stage took. */
export interface EncodedViewBatch extends EncodedViews {
  stageMs: VisionStageTimes;
}

/** Learned vectors used to assemble visual embeddings (docs/model.md §5.6); V2 has no image_newline. */
export type SpecialVectorName = 'image_newline' | 'view_seperator';

/**
 * How the decoder (CPU or GPU) stores a sequence's keys and values: IEEE half (half the cache bytes
 * read per decode step and held) or F32.
 */
export type KvCacheDtype = 'f16' | 'f32';

export interface NativeModelHandle {
  createSequence(kvCache: KvCacheDtype): NativeSequence;
  forward(batch: ForwardInput[], options?: ForwardOptions): Promise<NativeForwardResult>;
  encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates: boolean): Promise<EncodedViewBatch>;
  specialVector(name: SpecialVectorName): Float32Array;
  readonly kernels: string;
  readonly threads: number;
  /** A prompt read in calls that end at multiples of this (all but the last) gives bitwise the results of one call. */
  readonly promptChunkTokens: number;
  readonly weightBytes: number;
  readonly convertedBytes: number;
  readonly quantizedBytes: number;
  readonly routedExpertPasses: number;
  readonly unreadTensors: string[];
}

/** One tensor entry of a safetensors header; begin and end are byte offsets in the data section. */
export interface SafetensorsHeaderEntry {
  name: string;
  dtype: string;
  shape: number[];
  begin: number;
  end: number;
}

/** The Vulkan model (native/vulkan/gpu_model.h): present only in builds with the GPU backend. */
export interface NativeGpuModelHandle {
  createSequence(kvCache: KvCacheDtype): NativeSequence;
  forward(batch: ForwardInput[]): Promise<NativeForwardResult>;
  encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates: boolean): Promise<EncodedViewBatch>;
  /** True when the vision encoder (SAM, CLIP or Qwen2, the projector) runs on the device too. */
  readonly visionOnDevice: boolean;
  readonly deviceName: string;
  readonly weightBytes: number;
  readonly memory: DeviceMemory;
  readonly queueWaits: number;
}

/** One Vulkan device as `scriptorium devices` lists it. */
export interface GpuDeviceInfo {
  /** Position in the driver's order: `--device gpu:INDEX`. */
  index: number;
  name: string;
  type: 'discrete' | 'integrated' | 'virtual' | 'cpu' | 'other';
  apiVersion: string;
  /** The largest device-local memory heap, in bytes. */
  memoryBytes: number;
  /** What a model may allocate on it: 90% of memoryBytes, or less under SCRIPTORIUM_GPU_MEMORY_MB (device-memory.ts). */
  memoryBudgetBytes: number;
  subgroupSize: number;
  sharedMemoryBytes: number;
  /** maxStorageBufferRange: the largest buffer one shader binding may span; larger weights are stored in several bindings. */
  bindingLimitBytes: number;
  computeQueue: boolean;
  /** Matrix-product shader paths this build runs on the device ('portable' wherever there is a compute queue, 'cooperative-matrix' where the device offers VK_NV_cooperative_matrix with what its shader needs). */
  shaderPaths: string[];
  /** The path the engine's larger matrix products take there in fast precision ('portable' in exact; '' without a compute queue). */
  matmulPath: string;
  /** VK_KHR_cooperative_matrix / VK_NV_cooperative_matrix when the device offers them. */
  cooperativeMatrixExtensions: string[];
}

/** What the addon's GPU backend reports: the devices, or why there are none it can use. */
export interface GpuBackendReport {
  available: boolean;
  reason?: string;
  devices: GpuDeviceInfo[];
}

/** A GPU model's device memory: its budget, and what its buffers (weights, activations, KV caches) hold now. */
export interface DeviceMemory {
  budgetBytes: number;
  usedBytes: number;
}

/** How the experts and the vocabulary head are held: the checkpoint's BF16 (none) or int8 converted at load. */
export type WeightQuantization = 'none' | 'int8';
export const QUANTIZE_CHOICES: readonly WeightQuantization[] = ['none', 'int8'];

export interface NativeBinding {
  /** Maps the checkpoint and builds the model on a native thread (F16 / F32 weights are converted there). */
  loadModel(dir: string, dims: object, threads: number, visionDims: VisionDims | undefined, options: { precision: Precision; quantize?: WeightQuantization; packedWeightsDir?: string }): Promise<NativeModelHandle>;
  loadGpuModel?: (dir: string, dims: object, deviceIndex: number, visionDims: VisionDims | undefined, options: { precision: Precision }) => Promise<NativeGpuModelHandle>;
  supportedKernelSets(): string[];
  /** Validates a header exactly as loading does (a file's data section holds dataBytes); throws naming `file`. */
  readSafetensorsHeader(json: Uint8Array, dataBytes: number, file: string): { tensors: SafetensorsHeaderEntry[]; metadata: Record<string, string> };
  gpuDevices(): Promise<GpuBackendReport>;
}

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
let binding: NativeBinding | undefined;

export function nativeBinding(): NativeBinding {
  if (!binding) {
    const file = path.join(packageRoot, 'build/Release/scriptorium_native.node');
    try {
      binding = createRequire(import.meta.url)(file) as NativeBinding;
    } catch (error) {
      throw new Error(`the native engine is not built (${file}): run \`npm ci\` or \`npm run build:native\` (${(error as Error).message})`);
    }
  }
  return binding;
}
