// Writes a synthetic checkpoint directory in the exact Hugging Face layout of a variant: config.json,
// safetensors shard(s) + index with random BF16 weights (deterministic for a seed), tokenizer files,
// and the marker that flags the folder as synthetic.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeTokenizerFiles } from '../../engine/tokenizer-files.js';
import type { Variant } from '../../vocabulary/ocr-vocabulary.js';
import { modelConfig, type ConfigJson, type ModelSize } from './model-configs.js';
import { bf16ToF32, f32ToF16, NormalBf16Stream } from './random-weights.js';
import { DTYPE_BYTES, writeSafetensorsCheckpoint, type TensorToWrite } from './safetensors-writer.js';
import { writeSyntheticMarker } from './synthetic-marker.js';
import { elementCount, tensorManifest } from './tensor-manifest.js';

export interface SynthCheckpointOptions {
  variant: Variant;
  size: ModelSize;
  /** Created if missing; existing files of the same names are overwritten. */
  outDir: string;
  /** Weights are a function of (seed mod 2³², tensor name). Default 0. */
  seed?: number;
  /**
   * Dtype each weight is stored in (default BF16, as published). The values are the BF16 ones of the
   * same seed: widened exactly to F32, or rounded to nearest even in F16 (exact except below 2^-14).
   */
  dtypeOf?: (tensorName: string) => WeightDType;
  /**
   * Adds the int64 CLIP position_ids buffer [1, positions] that re-saved transformers copies persist
   * (V1/V3); the model does not read it.
   */
  positionIds?: boolean;
  /** Largest shard data size. Default: one shard, like the real checkpoints. */
  maxShardBytes?: number;
  /** Safetensors file bytes written so far and in total. */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

export interface SynthCheckpoint {
  /** config.json, the shards and the index (tokenizer files not listed). */
  files: string[];
  tensors: number;
  parameters: number;
  /** Bytes of the safetensors shards, headers included. */
  bytes: number;
}

export async function synthCheckpoint(options: SynthCheckpointOptions): Promise<SynthCheckpoint> {
  const { variant, size, outDir, seed = 0 } = options;
  const config = modelConfig(variant, size);
  const manifest = tensorManifest(config);
  await mkdir(outDir, { recursive: true });
  const configFile = join(outDir, 'config.json');
  await writeFile(configFile, JSON.stringify(config, null, 2));
  const tensors: TensorToWrite[] = manifest.map((spec) => {
    const dtype = options.dtypeOf?.(spec.name) ?? 'BF16';
    return { name: spec.name, dtype, shape: spec.shape, openData: () => weightValues(new NormalBf16Stream(seed, spec.name, spec.init), dtype) };
  });
  if (options.positionIds) tensors.push(positionIdsBuffer(config));
  const written = await writeSafetensorsCheckpoint(outDir, tensors, {
    maxShardBytes: options.maxShardBytes,
    onProgress: options.onProgress,
  });
  await writeTokenizerFiles(outDir);
  await writeSyntheticMarker(outDir, { variant, size, seed });
  return {
    files: [configFile, ...written.files],
    tensors: manifest.length,
    parameters: manifest.reduce((sum, spec) => sum + elementCount(spec), 0),
    bytes: written.bytes,
  };
}

export type WeightDType = 'BF16' | 'F16' | 'F32';

/** Fills chunks of a tensor's bytes with the stream's values stored as `dtype`. */
function weightValues(stream: NormalBf16Stream, dtype: WeightDType): (chunk: Uint8Array) => void {
  if (dtype === 'BF16') return (chunk) => stream.fill(new Uint16Array(chunk.buffer, chunk.byteOffset, chunk.length / 2));
  return (chunk) => {
    const values = new Uint16Array(chunk.length / DTYPE_BYTES[dtype]);
    stream.fill(values);
    if (dtype === 'F32') {
      const out = new Uint32Array(chunk.buffer, chunk.byteOffset, values.length);
      for (let i = 0; i < values.length; i++) out[i] = values[i] << 16;
    } else {
      const out = new Uint16Array(chunk.buffer, chunk.byteOffset, values.length);
      for (let i = 0; i < values.length; i++) out[i] = f32ToF16(bf16ToF32(values[i]));
    }
  };
}

/** model.vision_model.embeddings.position_ids: I64 [1, positions] holding 0, 1, …, as transformers' CLIP saves it. */
function positionIdsBuffer(config: ConfigJson): TensorToWrite {
  const clip = config.vision_config.width['clip-l-14-224'];
  if (!clip) throw new Error('position_ids belong to the CLIP encoder (V1/V3)');
  const positions = (clip.image_size / clip.patch_size) ** 2 + 1;
  return {
    name: 'model.vision_model.embeddings.position_ids',
    dtype: 'I64',
    shape: [1, positions],
    openData: () => {
      let next = 0n;
      return (chunk) => {
        const out = new BigInt64Array(chunk.buffer, chunk.byteOffset, chunk.length / 8);
        for (let i = 0; i < out.length; i++) out[i] = next++;
      };
    },
  };
}
