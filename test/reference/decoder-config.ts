// Decoder hyper-parameters read from the top level of a checkpoint's config.json (docs/model.md §1.1, §8.4).

/** Mixture-of-experts settings of the MoE layers. */
export interface MoeConfig {
  experts: number; // n_routed_experts
  expertsPerToken: number; // num_experts_per_tok (top-k)
  expertWidth: number; // moe_intermediate_size
  sharedWidth: number; // n_shared_experts × moe_intermediate_size; 0 = no shared experts
  firstDenseLayers: number; // first_k_dense_replace
  layerFrequency: number; // moe_layer_freq
  routedScalingFactor: number;
  normTopkProb: boolean;
}

/** Everything the reference decoder needs to know about the model's shape. */
export interface DecoderConfig {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number; // hiddenSize / heads
  intermediateSize: number; // dense SwiGLU width
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  moe: MoeConfig | null; // null: every layer is dense
  slidingWindow: number | null; // V3 R-SWA window W; null: full causal attention (V1, V2)
}

/** Parses config.json (top-level keys) into a DecoderConfig, refusing settings the reference does not implement. */
export function readDecoderConfig(json: Record<string, unknown>): DecoderConfig {
  const hiddenSize = integer(json, 'hidden_size');
  const heads = integer(json, 'num_attention_heads');
  const kvHeads = integer(json, 'num_key_value_heads', heads);
  if (hiddenSize % heads !== 0 || heads % kvHeads !== 0) {
    throw new Error(`config.json: hidden_size ${hiddenSize}, heads ${heads}, kv heads ${kvHeads} do not divide evenly`);
  }
  if (json['use_mla'] === true) throw new Error('config.json: use_mla is true; the reference implements plain MHA only');
  if (json['rope_scaling'] != null) throw new Error('config.json: rope_scaling is set; the reference implements none');
  const scoring = json['scoring_func'] ?? 'softmax';
  if (scoring !== 'softmax') throw new Error(`config.json: scoring_func ${String(scoring)}; only softmax is implemented`);
  const topkMethod = json['topk_method'] ?? 'greedy';
  if (topkMethod !== 'greedy') throw new Error(`config.json: topk_method ${String(topkMethod)}; only greedy is implemented`);

  return {
    hiddenSize,
    layers: integer(json, 'num_hidden_layers'),
    heads,
    kvHeads,
    headDim: hiddenSize / heads,
    intermediateSize: integer(json, 'intermediate_size'),
    vocabSize: integer(json, 'vocab_size'),
    rmsNormEps: number(json, 'rms_norm_eps', 1e-6),
    ropeTheta: number(json, 'rope_theta', 10000),
    moe: json['n_routed_experts'] == null ? null : readMoeConfig(json),
    slidingWindow: isUnlimitedOcr(json) ? slidingWindow(json) : null,
  };
}

function readMoeConfig(json: Record<string, unknown>): MoeConfig {
  const expertWidth = integer(json, 'moe_intermediate_size');
  return {
    experts: integer(json, 'n_routed_experts'),
    expertsPerToken: integer(json, 'num_experts_per_tok'),
    expertWidth,
    sharedWidth: integer(json, 'n_shared_experts', 0) * expertWidth,
    firstDenseLayers: integer(json, 'first_k_dense_replace', 0),
    layerFrequency: integer(json, 'moe_layer_freq', 1),
    routedScalingFactor: number(json, 'routed_scaling_factor', 1.0),
    normTopkProb: json['norm_topk_prob'] === true,
  };
}

/** Whether `layer` has an MoE FFN (DeepSeek-V2: layer ≥ first_k_dense_replace and layer % moe_layer_freq == 0). */
export function isMoeLayer(config: DecoderConfig, layer: number): boolean {
  const moe = config.moe;
  return moe !== null && layer >= moe.firstDenseLayers && layer % moe.layerFrequency === 0;
}

function isUnlimitedOcr(json: Record<string, unknown>): boolean {
  const architectures = json['architectures'];
  return (
    (Array.isArray(architectures) && architectures[0] === 'UnlimitedOCRForCausalLM') ||
    json['model_type'] === 'unlimited-ocr'
  );
}

function slidingWindow(json: Record<string, unknown>): number {
  const window = json['sliding_window_size'] ?? json['sliding_window'];
  if (typeof window !== 'number' || !Number.isInteger(window) || window < 1) {
    throw new Error('config.json: Unlimited-OCR needs a positive integer sliding_window_size (or sliding_window)');
  }
  return window;
}

function integer(json: Record<string, unknown>, key: string, fallback?: number): number {
  const value = json[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new Error(`config.json: ${key} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

function number(json: Record<string, unknown>, key: string, fallback: number): number {
  const value = json[key] ?? fallback;
  if (typeof value !== 'number') throw new Error(`config.json: ${key} must be a number, got ${String(value)}`);
  return value;
}
