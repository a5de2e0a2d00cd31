// Writes a synthetic checkpoint directory in the exact Hugging Face layout of a variant: config.json,
// safetensors shard(s) + index with random BF16 weights (deterministic for a seed), tokenizer files,
// and the marker that flags the folder as synthetic.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeTokenizerFiles } from '../tokenizer-files.js';
import type { Variant } from '../model-config.js';
import { modelConfig, type ModelSize } from './model-configs.js';
import { NormalBf16Stream } from './random-weights.js';
import { writeSafetensorsCheckpoint, type TensorToWrite } from './safetensors-writer.js';
import { writeSyntheticMarker } from './synthetic-marker.js';
import { elementCount, tensorManifest } from './tensor-manifest.js';

export interface SynthCheckpointOptions {
  variant: Variant;
  size: ModelSize;
  /** Created if missing; existing files of the same names are overwritten. */
  outDir: string;
  /** Weights are a function of (seed mod 2³², tensor name). Default 0. */
  seed?: number;
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
  const tensors: TensorToWrite[] = manifest.map((spec) => ({
    name: spec.name,
    dtype: spec.dtype,
    shape: spec.shape,
    openData: () => {
      const stream = new NormalBf16Stream(seed, spec.name, spec.init);
      return (chunk) => stream.fill(new Uint16Array(chunk.buffer, chunk.byteOffset, chunk.length / 2));
    },
  }));
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
