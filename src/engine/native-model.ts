// The TypeScript face of the native engine: loads the addon, maps a checkpoint directory, and runs
// batched decoder forward passes and vision encodes on native threads. Calls on one model are
// queued here so that libuv's worker threads never wait on the engine's lock.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { deviceLabel, resolveDevice, type DeviceSpec, type GpuBackendReport, type ResolvedDevice } from './compute-device.js';
import { cpuLimit } from './cpu-limit.js';
import type { DeviceMemory } from './device-memory.js';
import { ENGINE_DEFAULT_PRECISION, type Precision } from './precision.js';
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { loadModelConfig, type ModelConfig } from './model-config.js';
import { parseVisionDims, type VisionDims } from './vision-config.js';

/** A KV cache owned by the native engine. The first forward call on it is the prefill. */
export interface NativeSequence {
  /** Tokens consumed so far (= the next absolute position). */
  readonly length: number;
  /** Tokens of the first forward call (the R-SWA prefix for V3); -1 before it. */
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
}

/** One input's result: the argmax over its ids not banned, and its logits[vocab] when asked. */
export interface ForwardOutput {
  best: number;
  logits?: Float32Array;
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

/** The decoders' default: half, within the reference tolerances (docs/model.md §7.5). */
export const DEFAULT_KV_CACHE: KvCacheDtype = 'f16';

interface NativeModelHandle {
  createSequence(kvCache: KvCacheDtype): NativeSequence;
  forward(batch: ForwardInput[]): Promise<{ best: Int32Array; logits: Float32Array }>;
  encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates: boolean): Promise<EncodedViewBatch>;
  specialVector(name: SpecialVectorName): Float32Array;
  readonly kernels: string;
  readonly threads: number;
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
interface NativeGpuModelHandle {
  createSequence(kvCache: KvCacheDtype): NativeSequence;
  forward(batch: ForwardInput[]): Promise<{ best: Int32Array; logits: Float32Array }>;
  encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates: boolean): Promise<EncodedViewBatch>;
  /** True when the vision encoder (SAM, CLIP or Qwen2, the projector) runs on the device too. */
  readonly visionOnDevice: boolean;
  readonly deviceName: string;
  readonly weightBytes: number;
  readonly memory: DeviceMemory;
  readonly queueWaits: number;
}

interface NativeBinding {
  /** Maps the checkpoint and builds the model on a native thread (F16 / F32 weights are converted there). */
  loadModel(dir: string, dims: object, threads: number, visionDims: VisionDims | undefined, options: { precision: Precision; quantize?: WeightQuantization }): Promise<NativeModelHandle>;
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

/** How the experts and the vocabulary head are held: the checkpoint's BF16 (none) or int8 converted at load. */
export type WeightQuantization = 'none' | 'int8';
export const QUANTIZE_CHOICES: readonly WeightQuantization[] = ['none', 'int8'];

export interface LoadOptions {
  variant?: Variant;
  /** Engine threads; defaults to cpuLimit(): the CPUs this process may use, within its cgroup's quota. */
  threads?: number;
  /** Where the decoder runs (default cpu); see compute-device.ts. */
  device?: DeviceSpec;
  /** The decoder's KV cache storage, on the CPU or the GPU (default DEFAULT_KV_CACHE). */
  kvCache?: KvCacheDtype;
  /** Activation precision of the CPU engine's products (default exact); see precision.ts. */
  precision?: Precision;
  /** int8: the routed and shared experts and lm_head converted at load to int8 (CPU decoder only; default none). */
  quantize?: WeightQuantization;
}

export class NativeModel {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly config: ModelConfig,
    /** Null for decoder-only checkpoints (config.json without vision_config). */
    readonly vision: VisionDims | null,
    /** The CPU engine: the decoder and vision encoders unless a GPU runs them, and the special vectors. */
    private readonly handle: NativeModelHandle,
    readonly device: ResolvedDevice,
    private readonly gpu: NativeGpuModelHandle | null,
    /** How the decoder stores keys and values, on the CPU or the GPU. */
    readonly kvCache: KvCacheDtype,
    readonly precision: Precision,
    readonly quantize: WeightQuantization,
  ) {}

  /**
   * Maps the checkpoint; with a GPU device, also uploads the decoder's weights to it, and those of the
   * vision encoder (SAM, then CLIP for V1 / V3 or Qwen2 for V2, and the projector). Rejects when the
   * device named cannot be used, saying why.
   */
  static async load(modelDir: string, options: LoadOptions = {}): Promise<NativeModel> {
    const config = await loadModelConfig(modelDir, options.variant);
    const device = await resolveDevice(options.device ?? { kind: 'cpu' });
    const quantize = options.quantize ?? 'none';
    if (quantize !== 'none' && device.backend !== 'cpu') throw new Error(`--quantize ${quantize} runs on the CPU decoder only; drop it or use --device cpu`);
    const vision = parseVisionDims(config);
    const threads = options.threads ?? cpuLimit();
    const kvCache = options.kvCache ?? DEFAULT_KV_CACHE;
    const binding = nativeBinding();
    const precision = options.precision ?? ENGINE_DEFAULT_PRECISION;
    const handle = await binding.loadModel(modelDir, config.decoder, threads, vision ?? undefined, { precision, quantize });
    if (device.backend === 'cpu') return new NativeModel(config, vision, handle, device, null, kvCache, precision, quantize);
    if (!binding.loadGpuModel) throw new Error('the GPU backend is not available: this build of the addon has no Vulkan backend');
    const gpu = await binding.loadGpuModel(modelDir, config.decoder, device.index, vision ?? undefined, { precision });
    return new NativeModel(config, vision, handle, device, gpu, kvCache, precision, quantize);
  }

  /** What results, status and metrics name the engine by: `cpu-<kernel set>` or `vulkan:<device name>`, `+int8` when quantised. */
  get backend(): string {
    const quantized = this.quantize === 'int8' ? '+int8' : '';
    return `${deviceLabel(this.device, this.handle.kernels)}${quantized}`;
  }

  get kernels(): string {
    return this.handle.kernels;
  }

  get threads(): number {
    return this.handle.threads;
  }

  /** Whether encodeImages runs on the GPU device (false on the CPU). */
  get visionOnDevice(): boolean {
    return this.gpu?.visionOnDevice ?? false;
  }

  /** Bytes of the mapped checkpoint (CPU), or of the weights on the device (GPU). */
  get weightBytes(): number {
    return this.gpu ? this.gpu.weightBytes : this.handle.weightBytes;
  }

  /** A GPU model's device memory budget and what its buffers hold of it now; null on the CPU. */
  get deviceMemory(): DeviceMemory | null {
    return this.gpu ? this.gpu.memory : null;
  }

  /** Times a GPU model's device has made the host wait for its queue since it was opened; null on the CPU. */
  get queueWaits(): number | null {
    return this.gpu ? this.gpu.queueWaits : null;
  }

  /** Bytes of the BF16 copies made of F16 / F32 weights at load: memory on top of the mapped files. */
  get convertedBytes(): number {
    return this.handle.convertedBytes;
  }

  /** Bytes of the int8 experts and head made at load (--quantize int8), in place of their released BF16 pages. */
  get quantizedBytes(): number {
    return this.handle.quantizedBytes;
  }

  /** Routed experts the CPU decoder has run: per MoE layer and forward call, each distinct expert its batch selected. */
  get routedExpertPasses(): number {
    return this.handle.routedExpertPasses;
  }

  /** Tensors of the checkpoint the model never reads (extra buffers such as position_ids), sorted. */
  get unreadTensors(): string[] {
    return this.handle.unreadTensors;
  }

  get vocab(): number {
    return this.config.decoder.vocab;
  }

  /** A new sequence whose cache stores keys and values as `kvCache` (the model's option by default); one batch may mix both. */
  createSequence(kvCache: KvCacheDtype = this.kvCache): NativeSequence {
    return (this.gpu ?? this.handle).createSequence(kvCache);
  }

  /**
   * Runs one batched step; returns, in input order, each input's argmax over the ids it does not ban
   * (lowest id on ties) and, unless it set `logits: false`, the logits[vocab] of its last new token.
   * Without logits the vocabulary head streams through a running argmax and nothing vocab-sized is
   * copied.
   */
  forward(batch: ForwardInput[]): Promise<ForwardOutput[]> {
    const engine = this.gpu ?? this.handle;
    const run = this.queue.then(() => engine.forward(batch));
    this.queue = run.catch(() => undefined);
    return run.then(({ best, logits }) => {
      let row = 0;
      return batch.map((input, i) => {
        if (input.logits === false) return { best: best[i] };
        const rowLogits = logits.subarray(row * this.vocab, (row + 1) * this.vocab);
        row += 1;
        return { best: best[i], logits: rowLogits };
      });
    });
  }

  /**
   * Encodes n square views of one side (pixels[n, 3, side, side], normalised to [-1, 1]) through
   * the vision encoder and projector. Rejects sides the model cannot encode (not a multiple of the
   * patch size; for V2 anything but 768 or 1024). keepIntermediates adds the SAM and encoder outputs.
   * The call waits behind earlier ones on this model: leave `pixels` unchanged until it settles.
   */
  encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates = false): Promise<EncodedViewBatch> {
    const engine = this.gpu?.visionOnDevice ? this.gpu : this.handle;
    const run = this.queue.then(() => engine.encodeImages(pixels, n, side, keepIntermediates));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** image_newline or view_seperator [hidden] as F32; throws for image_newline on V2. */
  specialVector(name: SpecialVectorName): Float32Array {
    return this.handle.specialVector(name);
  }
}
