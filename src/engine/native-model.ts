// The TypeScript face of the native engine: maps a checkpoint directory into a model of the addon
// (native-binding.ts), and runs batched decoder forward passes and vision encodes on native threads.
// Calls on one model are queued here so that libuv's worker threads never wait on the engine's lock:
// forward calls in one queue and encodes in another on the CPU, whose engine interleaves the two
// (docs/engine.md "Joining pages"), one queue for both on a GPU.
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { deviceLabel, resolveDevice, type DeviceSpec, type ResolvedDevice } from './compute-device.js';
import { cpuLimit } from './cgroup-limits.js';
import { loadModelConfig, type ModelConfig } from './model-config.js';
import {
  nativeBinding,
  type DeviceMemory,
  type EncodedViewBatch,
  type ForwardInput,
  type ForwardOptions,
  type ForwardOutput,
  type KvCacheDtype,
  type NativeGpuModelHandle,
  type NativeModelHandle,
  type NativeSequence,
  type SpecialVectorName,
  type WeightQuantization,
} from './native-binding.js';
import { ENGINE_DEFAULT_PRECISION, type Precision } from './precision.js';
import { parseVisionDims, type VisionDims } from './vision-config.js';

/** The decoders' default: half, within the reference tolerances (docs/model.md §7.5). */
export const DEFAULT_KV_CACHE: KvCacheDtype = 'f16';

export interface LoadOptions {
  variant?: Variant;
  /** Engine threads; defaults to cpuLimit(): the CPUs this process may use, within its cgroup's quota. */
  threads?: number;
  /** Where the decoder runs (default cpu); see compute-device.ts. */
  device?: DeviceSpec;
  /** The decoder's KV cache storage, on the CPU or the GPU (default DEFAULT_KV_CACHE). */
  kvCache?: KvCacheDtype;
  /** Activation precision of the engine's products, on the CPU or the GPU (default exact); see precision.ts. */
  precision?: Precision;
  /** int8: the routed and shared experts and lm_head converted at load to int8 (CPU decoder only; default none). */
  quantize?: WeightQuantization;
  /**
   * A folder for the CPU decoder's packed weights, written once and mapped by every process on the
   * node that loads the same checkpoint (default: $SCRIPTORIUM_PACKED_WEIGHTS_DIR, else none: each
   * process packs into its own memory).
   */
  packedWeightsDir?: string;
}

/** The environment variable naming the node's folder of shared packed weights (docs/engine.md). */
export const PACKED_WEIGHTS_DIR_VARIABLE = 'SCRIPTORIUM_PACKED_WEIGHTS_DIR';

/** Calls that run one after another, each once the one before it has settled. */
class CallQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(call: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(call);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/** One forward call's outputs, in input order, and its own time on the engine. */
export interface ForwardStep {
  outputs: ForwardOutput[];
  computeMs: number;
}

export class NativeModel {
  private readonly forwardCalls = new CallQueue();
  /** The forward calls' queue on a GPU; on the CPU a queue of its own (the engine interleaves the two). */
  private readonly encodeCalls: CallQueue;

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
  ) {
    this.encodeCalls = gpu ? this.forwardCalls : new CallQueue();
  }

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
    const packedWeightsDir = options.packedWeightsDir ?? (process.env[PACKED_WEIGHTS_DIR_VARIABLE] || undefined);
    const handle = await binding.loadModel(modelDir, config.decoder, threads, vision ?? undefined, { precision, quantize, packedWeightsDir });
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

  /** The CPU decoder's: a prompt read in calls that end at multiples of this (all but the last) gives bitwise the results of one call. */
  get promptChunkTokens(): number {
    return this.handle.promptChunkTokens;
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
   * (lowest id on ties), that id's log-probability under the whole vocabulary (bans aside) and, unless
   * it set `logits: false`, the logits[vocab] of its last new token. Without logits the vocabulary
   * head streams through a running argmax and log-sum-exp, and nothing vocab-sized is copied.
   */
  forward(batch: ForwardInput[]): Promise<ForwardOutput[]> {
    return this.step(batch).then(({ outputs }) => outputs);
  }

  /**
   * forward() with its time on the engine; on the CPU `options.encodeMs` bounds what encodes may
   * take of the cores before the next forward call (a GPU model runs them one after the other).
   */
  step(batch: ForwardInput[], options: ForwardOptions = {}): Promise<ForwardStep> {
    const run = this.forwardCalls.run(() => (this.gpu ? this.gpu.forward(batch) : this.handle.forward(batch, options)));
    return run.then(({ best, logprob, logits, computeMs }) => {
      let row = 0;
      const outputs = batch.map((input, i): ForwardOutput => {
        if (input.logits === false) return { best: best[i], logprob: logprob[i] };
        const rowLogits = logits.subarray(row * this.vocab, (row + 1) * this.vocab);
        row += 1;
        return { best: best[i], logprob: logprob[i], logits: rowLogits };
      });
      return { outputs, computeMs };
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
    return this.encodeCalls.run(() => engine.encodeImages(pixels, n, side, keepIntermediates));
  }

  /** image_newline or view_seperator [hidden] as F32; throws for image_newline on V2. */
  specialVector(name: SpecialVectorName): Float32Array {
    return this.handle.specialVector(name);
  }
}
