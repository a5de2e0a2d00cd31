// The benchmark's probes of this machine's ceilings, from the addon built beside the engine
// (build/Release/scriptorium_probes.node, native/probes/): the production engine carries none of it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Options of the ceilings probe; defaults: every hardware thread, 1 GiB, 5 passes, 0.5 s. */
export interface CeilingOptions {
  threads?: number;
  /** Size of the buffer the read-bandwidth passes stream through; far larger than the caches. */
  bufferBytes?: number;
  passes?: number;
  /** Wall time of each compute measurement, in seconds. */
  seconds?: number;
}

/** The machine's ceilings, measured with every thread busy (native/probes/ceilings.h). */
export interface MachineCeilings {
  /** The active kernel set. */
  kernels: string;
  threads: number;
  /** Vector width of the read loop: avx512, avx2, sse2 or scalar. */
  readSimd: string;
  /** Memory read bandwidth, 1e9 bytes/s (best pass). */
  readGBps: number;
  /** The active set's gemm_f32 / gemm_bf16 on blocks resident in L2 (BF16: the faster of stored and packed weights). */
  gemmF32Gflops: number;
  gemmBf16Gflops: number;
  /** The active set's gemm_bf16_fast: the BF16-weight ceiling of --precision fast. */
  gemmBf16FastGflops: number;
  /** Instruction-throughput peaks of the multiply-add those kernels use; 0 when unknown (scalar). */
  peakF32Gflops: number;
  peakBf16Gflops: number;
  /** One core's clock from a chain of dependent adds; 0 when not measurable. */
  clockGhz: number;
}

/** Options of the GPU ceilings probe (native/probes/gpu_ceilings.h); defaults: gpu:0, 1 GiB, 5 passes, 2048, 0.5 s. */
export interface GpuCeilingOptions {
  device?: number;
  /** Buffer of the read-bandwidth rounds (capped at what the device can bind). */
  bufferBytes?: number;
  passes?: number;
  /** M = N = K of the timed matrix products. */
  matmulSide?: number;
  /** Wall time of each matrix-product measurement, in seconds. */
  seconds?: number;
}

/** A Vulkan device's ceilings, measured by shaders. */
export interface GpuCeilings {
  device: string;
  bufferBytes: number;
  /** Read bandwidth of a streaming read shader, 1e9 bytes/s (best round). */
  readGBps: number;
  /** ShaderOps::matmul_bf16 on square products, per shader path the device runs. */
  matmul: { path: string; gflops: number }[];
}

/** Options of the expert product probe; defaults: every hardware thread, 256 MiB per matrix, K 1280, 5 passes, rows 1, 2, 4, 6, 8, 12, 16. */
export interface ExpertProductOptions {
  threads?: number;
  weightBytes?: number;
  cols?: number;
  passes?: number;
  batches?: number[];
}

/** One expert product streaming a matrix far larger than the caches (native/probes/expert_products.h). */
export interface ExpertProductSpeed {
  format: 'bf16' | 'int8';
  /** The kernel set: the active one for BF16 ("avx512bf16 packed", ...), each int8 set the CPU has. */
  kernels: string;
  /** Activation rows: the tokens of a batch that chose this expert. */
  batch: number;
  /** 1e9 bytes/s of weights (int8: values and scales), best pass. */
  weightGBps: number;
  /** 1e9 multiply-adds ×2 per second in the same pass. */
  gflops: number;
}

interface ProbesBinding {
  measureCeilings(options?: CeilingOptions): Promise<MachineCeilings>;
  measureGpuCeilings(options?: GpuCeilingOptions): Promise<GpuCeilings>;
  measureExpertProducts(options: ExpertProductOptions): Promise<ExpertProductSpeed[]>;
}

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
let binding: ProbesBinding | undefined;

function probes(): ProbesBinding {
  if (!binding) {
    const file = path.join(packageRoot, 'build/Release/scriptorium_probes.node');
    try {
      binding = createRequire(import.meta.url)(file) as ProbesBinding;
    } catch (error) {
      throw new Error(`the benchmark probes are not built (${file}): run \`npm run build:native\` (${(error as Error).message})`);
    }
  }
  return binding;
}

/** The BF16 expert product of the active kernel set and every int8 set the CPU has, at each row count, on native threads. */
export function measureExpertProducts(options: ExpertProductOptions = {}): Promise<ExpertProductSpeed[]> {
  return probes().measureExpertProducts(options);
}

/** Measures the ceilings on native threads; rejects options it cannot measure with (synchronously). */
export function measureCeilings(options?: CeilingOptions): Promise<MachineCeilings> {
  return probes().measureCeilings(options);
}

/** Measures a Vulkan device's ceilings off the event loop; rejects without the Vulkan backend. */
export function measureGpuCeilings(options?: GpuCeilingOptions): Promise<GpuCeilings> {
  return probes().measureGpuCeilings(options);
}

/**
 * The ceilings the model's figures are compared with when it runs on a GPU: the device's read
 * bandwidth, and its fastest matrix-product path for every product of the vision encoders and the
 * decoder (their attention runs in f32 shaders on the device too).
 */
export function gpuModelCeilings(cpu: MachineCeilings, gpu: GpuCeilings): MachineCeilings {
  const matmul = Math.max(...gpu.matmul.map((m) => m.gflops));
  return { ...cpu, readGBps: gpu.readGBps, gemmBf16Gflops: matmul, gemmBf16FastGflops: matmul, gemmF32Gflops: matmul };
}
