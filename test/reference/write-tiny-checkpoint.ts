// Writes small synthetic decoder checkpoints (config.json + index + two BF16 shards) with deterministic
// random weights, and raw safetensors files, for tests of the reference decoder.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { seededRandom } from '../support/seeded-random.js';
import { isMoeLayer, readDecoderConfig } from './decoder-config.js';

/** One tensor to write: bytes[product(shape)·dtype width], little-endian. */
export interface TensorBytes {
  name: string;
  dtype: 'F32' | 'F16' | 'BF16';
  shape: number[];
  bytes: Uint8Array;
}

/** V1-style config.json of the test decoder: hidden 16, 2 heads × 8, 2 layers (dense, MoE), 4 experts top-2, vocab 50. */
export function tinyDecoderConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['DeepseekOCRForCausalLM'],
    model_type: 'deepseek_vl_v2',
    hidden_size: 16,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 2,
    intermediate_size: 32,
    moe_intermediate_size: 8,
    n_routed_experts: 4,
    num_experts_per_tok: 2,
    n_shared_experts: 1,
    first_k_dense_replace: 1,
    vocab_size: 50,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    ...overrides,
  };
}

/** Writes config.json and BF16 weights for every decoder tensor of `config` (§3.6) into dir; same seed, same weights. */
export function writeTinyCheckpoint(dir: string, config: Record<string, unknown>, seed: number): void {
  const c = readDecoderConfig(config);
  const random = seededRandom(seed);
  const uniform = (count: number, low: number, high: number): Uint8Array => {
    const values = new Float32Array(count);
    for (let i = 0; i < values.length; i++) values[i] = low + (high - low) * random();
    return bf16Bytes(values);
  };
  // Linear weights uniform in ±√(3/in): unit-variance outputs for unit-variance inputs.
  const linear = (name: string, rows: number, cols: number): TensorBytes => {
    const bound = Math.sqrt(3 / cols);
    return { name, dtype: 'BF16', shape: [rows, cols], bytes: uniform(rows * cols, -bound, bound) };
  };
  const norm = (name: string): TensorBytes => ({
    name,
    dtype: 'BF16',
    shape: [c.hiddenSize],
    bytes: uniform(c.hiddenSize, 0.8, 1.2),
  });
  const swiGlu = (prefix: string, width: number): TensorBytes[] => [
    linear(`${prefix}.gate_proj.weight`, width, c.hiddenSize),
    linear(`${prefix}.up_proj.weight`, width, c.hiddenSize),
    linear(`${prefix}.down_proj.weight`, c.hiddenSize, width),
  ];

  const layerTensors: TensorBytes[] = [];
  for (let l = 0; l < c.layers; l++) {
    const prefix = `model.layers.${l}`;
    layerTensors.push(
      norm(`${prefix}.input_layernorm.weight`),
      norm(`${prefix}.post_attention_layernorm.weight`),
      linear(`${prefix}.self_attn.q_proj.weight`, c.heads * c.headDim, c.hiddenSize),
      linear(`${prefix}.self_attn.k_proj.weight`, c.kvHeads * c.headDim, c.hiddenSize),
      linear(`${prefix}.self_attn.v_proj.weight`, c.kvHeads * c.headDim, c.hiddenSize),
      linear(`${prefix}.self_attn.o_proj.weight`, c.hiddenSize, c.heads * c.headDim),
    );
    if (c.moe !== null && isMoeLayer(c, l)) {
      layerTensors.push(linear(`${prefix}.mlp.gate.weight`, c.moe.experts, c.hiddenSize));
      for (let e = 0; e < c.moe.experts; e++) layerTensors.push(...swiGlu(`${prefix}.mlp.experts.${e}`, c.moe.expertWidth));
      if (c.moe.sharedWidth > 0) layerTensors.push(...swiGlu(`${prefix}.mlp.shared_experts`, c.moe.sharedWidth));
    } else {
      layerTensors.push(...swiGlu(`${prefix}.mlp`, c.intermediateSize));
    }
  }
  const outerTensors: TensorBytes[] = [
    {
      name: 'model.embed_tokens.weight',
      dtype: 'BF16',
      shape: [c.vocabSize, c.hiddenSize],
      bytes: uniform(c.vocabSize * c.hiddenSize, -1, 1),
    },
    norm('model.norm.weight'),
    linear('lm_head.weight', c.vocabSize, c.hiddenSize),
  ];

  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const shards: [string, TensorBytes[]][] = [
    ['model-00001-of-00002.safetensors', layerTensors],
    ['model-00002-of-00002.safetensors', outerTensors],
  ];
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  for (const [fileName, tensors] of shards) {
    writeSafetensors(join(dir, fileName), tensors);
    for (const t of tensors) {
      weightMap[t.name] = fileName;
      totalSize += t.bytes.length;
    }
  }
  const index = { metadata: { total_size: totalSize }, weight_map: weightMap };
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index, null, 2));
}

/** Writes one safetensors file: u64 LE header length, JSON header, then the tensors' bytes back to back. */
export function writeSafetensors(path: string, tensors: TensorBytes[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.length] };
    offset += t.bytes.length;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([length, json, ...tensors.map((t) => t.bytes)]));
}

/** float32 values[n] → little-endian BF16 bytes[2n], rounded to nearest even. */
export function bf16Bytes(values: Float32Array): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint8Array(2 * values.length);
  for (let i = 0; i < values.length; i++) {
    const rounded = (bits[i] + 0x7fff + ((bits[i] >>> 16) & 1)) >>> 16;
    out[2 * i] = rounded & 0xff;
    out[2 * i + 1] = rounded >>> 8;
  }
  return out;
}
