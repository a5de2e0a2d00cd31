// config.json of a checkpoint directory: variant detection and the decoder dimensions the native
// engine needs. Every dimension comes from the file; absent keys take the defaults the official
// configuration classes use (docs/model.md §1).
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import type { Variant } from '../vocabulary/ocr-vocabulary.js';

/** Decoder dimensions, as the native engine reads them (see native/common/decoder_dims.h DecoderDims). */
export interface DecoderDims {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  moeIntermediate: number;
  routedExperts: number;
  expertsPerToken: number;
  sharedExperts: number;
  firstDenseLayers: number;
  moeLayerFreq: number;
  vocab: number;
  maxPositions: number;
  rmsEps: number;
  ropeTheta: number;
  routedScaling: number;
  normTopk: boolean;
  /** 0: full causal attention (V1/V2); W > 0: R-SWA over the prefill plus the W latest generated tokens (V3). */
  slidingWindow: number;
}

export interface ModelConfig {
  variant: Variant;
  decoder: DecoderDims;
  bosId: number;
  eosId: number;
  /** The parsed config.json, for the parts other modules read (vision_config, projector_config). */
  raw: Record<string, unknown>;
}

export class ModelConfigError extends Error {
  override name = 'ModelConfigError';
}

type Json = Record<string, unknown>;

const ARCHITECTURE_VARIANTS: Record<string, Variant> = {
  DeepseekOCRForCausalLM: 'v1',
  DeepseekOCR2ForCausalLM: 'v2',
  UnlimitedOCRForCausalLM: 'v3',
};

/** V1 and V3 checkpoints can hold identical weights: the variant is told by config.json alone. */
export function detectVariant(raw: Json): Variant {
  const architectures = raw.architectures;
  if (Array.isArray(architectures)) {
    for (const name of architectures) {
      const variant = ARCHITECTURE_VARIANTS[String(name)];
      if (variant) return variant;
    }
  }
  if (raw.model_type === 'unlimited-ocr') return 'v3';
  const vision = raw.vision_config as Json | undefined;
  if (vision?.model_name === 'deepencoderv2') return 'v2';
  if (raw.model_type === 'deepseek_vl_v2' || raw.model_type === 'DeepseekOCR') return 'v1';
  throw new ModelConfigError(
    `config.json: cannot tell the model variant from architectures ${JSON.stringify(architectures)} / model_type ${JSON.stringify(raw.model_type)}; pass --variant v1|v2|v3`,
  );
}

function lookup(raw: Json, key: string): unknown {
  if (raw[key] !== undefined && raw[key] !== null) return raw[key];
  const language = raw.language_config as Json | undefined;
  return language?.[key] ?? undefined;
}

function integer(raw: Json, key: string, fallback?: number): number {
  const value = lookup(raw, key) ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ModelConfigError(`config.json: ${key} must be a non-negative integer (got ${JSON.stringify(value)})`);
  }
  return value;
}

function real(raw: Json, key: string, fallback: number): number {
  const value = lookup(raw, key) ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ModelConfigError(`config.json: ${key} must be a number (got ${JSON.stringify(value)})`);
  }
  return value;
}

export function parseModelConfig(raw: Json, variantOverride?: Variant): ModelConfig {
  const variant = variantOverride ?? detectVariant(raw);
  const hidden = integer(raw, 'hidden_size');
  const heads = integer(raw, 'num_attention_heads');
  if (heads === 0 || hidden % heads !== 0) {
    throw new ModelConfigError('config.json: hidden_size must be a multiple of num_attention_heads');
  }
  const routedExperts = integer(raw, 'n_routed_experts', 0);
  const scoring = lookup(raw, 'scoring_func') ?? 'softmax';
  if (scoring !== 'softmax') throw new ModelConfigError(`config.json: scoring_func ${String(scoring)} is not supported (softmax only)`);
  const topk = lookup(raw, 'topk_method') ?? 'greedy';
  if (topk !== 'greedy') throw new ModelConfigError(`config.json: topk_method ${String(topk)} is not supported (greedy only)`);
  if (lookup(raw, 'use_mla') === true) throw new ModelConfigError('config.json: use_mla true is not supported (these models use MHA)');
  const window =
    variant === 'v3' ? integer(raw, 'sliding_window_size', (lookup(raw, 'sliding_window') as number | undefined) ?? 128) : 0;
  const decoder: DecoderDims = {
    hidden,
    layers: integer(raw, 'num_hidden_layers'),
    heads,
    kvHeads: integer(raw, 'num_key_value_heads', heads),
    headDim: integer(raw, 'head_dim', hidden / heads),
    intermediate: integer(raw, 'intermediate_size'),
    moeIntermediate: integer(raw, 'moe_intermediate_size', 0),
    routedExperts,
    expertsPerToken: integer(raw, 'num_experts_per_tok', 0),
    sharedExperts: integer(raw, 'n_shared_experts', 0),
    firstDenseLayers: integer(raw, 'first_k_dense_replace', 0),
    moeLayerFreq: integer(raw, 'moe_layer_freq', 1),
    vocab: integer(raw, 'vocab_size'),
    maxPositions: integer(raw, 'max_position_embeddings'),
    rmsEps: real(raw, 'rms_norm_eps', 1e-6),
    ropeTheta: real(raw, 'rope_theta', 10000),
    routedScaling: real(raw, 'routed_scaling_factor', 1),
    normTopk: lookup(raw, 'norm_topk_prob') === true,
    slidingWindow: window,
  };
  return {
    variant,
    decoder,
    bosId: integer(raw, 'bos_token_id', 0),
    eosId: integer(raw, 'eos_token_id', 1),
    raw,
  };
}

export async function loadModelConfig(modelDir: string, variantOverride?: Variant): Promise<ModelConfig> {
  const file = path.join(modelDir, 'config.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ModelConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ModelConfigError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ModelConfigError(`${file} must hold a JSON object`);
  }
  return parseModelConfig(raw as Json, variantOverride);
}
