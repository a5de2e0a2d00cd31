// config.json contents of DeepSeek-OCR (v1), DeepSeek-OCR-2 (v2) and Unlimited-OCR (v3), at full size
// (the published files: key order and values as in docs/model.md §1 and the real repositories) and as tiny
// test variants with the same structure and shrunk dimensions.
//
// The real configs leave some vision dimensions to the reference code. Tiny configs state them as
// extra keys (absent from every real config.json, where VISION_CODE_DEFAULTS of ../vision-config.ts apply):
//   vision_config.width.sam_vit_b:     patch_size, window_size, mlp_dim, neck_channels
//   vision_config.width.clip-l-14-224: mlp_dim
//   vision_config.width.qwen2-0-5b:    layers, heads, kv_heads, mlp_dim

import type { Variant } from '../../vocabulary/ocr-vocabulary.js';

/** tiny: shrunk everywhere; wide: the official decoder widths (hidden 1280, the full vocabulary) over
 * two layers and eight experts with the tiny vision encoders, so its embedding and vocabulary head
 * (316 MiB each) exceed what some GPUs bind while it stays quick to write and run; full: as published. */
export type ModelSize = 'tiny' | 'wide' | 'full';

export interface SamWidthConfig {
  downsample_channels: [number, number]; // [net_2 out, net_3 out]; v2 configs list a net_3 width the weights ignore
  global_attn_indexes: number[];
  heads: number;
  layers: number;
  mlp_dim?: number; // default width · 4
  neck_channels?: number; // default 256
  patch_size?: number; // default 16
  width: number;
  window_size?: number; // default 14
}

export interface ClipWidthConfig {
  heads: number;
  image_size: number;
  layers: number;
  mlp_dim?: number; // default width · 4
  patch_size: number;
  width: number;
}

export interface Qwen2WidthConfig {
  dim: number;
  heads?: number; // default 14
  kv_heads?: number; // default 2
  layers?: number; // default 24
  mlp_dim?: number; // default 4864
}

export interface VisionConfig {
  image_size: number;
  mlp_ratio: number;
  model_name: 'deeplip_b_l' | 'deepencoderv2';
  model_type: 'vision';
  width: {
    'clip-l-14-224'?: ClipWidthConfig;
    'qwen2-0-5b'?: Qwen2WidthConfig;
    sam_vit_b: SamWidthConfig;
  };
}

export interface ProjectorConfig {
  input_dim: number;
  model_type: 'mlp_projector';
  n_embed: number;
  projector_type: 'linear';
}

/** Decoder keys shared by the top level and language_config (alphabetical, as saved). */
export interface DecoderKeys {
  bos_token_id: number;
  eos_token_id: number;
  first_k_dense_replace: number;
  hidden_size: number;
  intermediate_size: number;
  kv_lora_rank: null;
  lm_head: boolean;
  max_position_embeddings: number;
  moe_intermediate_size: number;
  n_group: number;
  n_routed_experts: number;
  n_shared_experts: number;
  num_attention_heads: number;
  num_experts_per_tok: number;
  num_hidden_layers: number;
  num_key_value_heads: number;
  q_lora_rank: null;
  qk_nope_head_dim: number;
  qk_rope_head_dim: number;
  rm_head: boolean;
  topk_group: number;
  topk_method: 'greedy';
  use_mla: boolean;
  v_head_dim: number;
  vocab_size: number;
  sliding_window_size?: number;
}

export interface LanguageConfig extends DecoderKeys {
  architectures: string[];
  auto_map: Record<string, string>;
  torch_dtype: 'bfloat16';
}

export interface ConfigJson extends DecoderKeys {
  _name_or_path: string;
  candidate_resolutions: number[][];
  global_view_pos: 'head';
  architectures: string[];
  auto_map: Record<string, string>;
  language_config: LanguageConfig;
  model_type: string;
  projector_config: ProjectorConfig;
  tile_tag: '2D';
  torch_dtype: 'bfloat16';
  transformers_version: string;
  vision_config: VisionConfig;
  sliding_window?: number;
}

interface DecoderShape {
  hidden: number;
  heads: number;
  layers: number;
  intermediate: number;
  moeIntermediate: number;
  routedExperts: number;
  expertsPerToken: number;
  sharedExperts: number;
}

const FULL_DECODER: DecoderShape = {
  hidden: 1280, heads: 10, layers: 12, intermediate: 6848,
  moeIntermediate: 896, routedExperts: 64, expertsPerToken: 6, sharedExperts: 2,
};

const WIDE_DECODER: DecoderShape = { ...FULL_DECODER, layers: 2, routedExperts: 8 };

const TINY_DECODER: DecoderShape = {
  hidden: 256, heads: 2, layers: 3, intermediate: 512,
  moeIntermediate: 64, routedExperts: 8, expertsPerToken: 2, sharedExperts: 1,
};

/** Rows of the embedding: the real tokenizer (128,827 ids) must fit, so tiny keeps it. */
const VOCAB_SIZE = 129280;
const V3_SLIDING_WINDOW = 128;

const FULL_SAM: SamWidthConfig = {
  downsample_channels: [512, 1024], global_attn_indexes: [2, 5, 8, 11], heads: 12, layers: 12, width: 768,
};
const FULL_CLIP: ClipWidthConfig = { heads: 16, image_size: 224, layers: 24, patch_size: 14, width: 1024 };
const FULL_QWEN2: Qwen2WidthConfig = { dim: 896 };

// Tiny vision: head_dim 32 everywhere; the SAM output (net_3) feeds CLIP as its patch embeddings,
// so net_3 width = CLIP width. Image geometry (1024 px, 16 px patches, 14-token windows) is the
// real one, so token counts match the full models.
const TINY_SAM: SamWidthConfig = {
  downsample_channels: [64, 128], global_attn_indexes: [1, 3], heads: 3, layers: 4,
  mlp_dim: 384, neck_channels: 32, patch_size: 16, width: 96, window_size: 14,
};
const TINY_CLIP: ClipWidthConfig = { heads: 4, image_size: 224, layers: 2, mlp_dim: 512, patch_size: 14, width: 128 };
const TINY_QWEN2: Qwen2WidthConfig = { dim: 128, heads: 4, kv_heads: 2, layers: 2, mlp_dim: 256 };
// Like the real v2 config (which lists v1's 1024), tiny v2 lists a net_3 width its weights do not
// have: net_3 outputs the Qwen2 dim.
const TINY_V2_SAM: SamWidthConfig = { ...TINY_SAM, downsample_channels: [64, 256] };

interface VariantIdentity {
  nameOrPath: string;
  architecture: string;
  autoMap: Record<string, string>;
  languageArchitecture: string;
  modelType: string;
  maxPositions: number;
}

const IDENTITY: Record<Variant, VariantIdentity> = {
  v1: {
    nameOrPath: 'deepseek-ai/DeepSeek-OCR',
    architecture: 'DeepseekOCRForCausalLM',
    autoMap: {
      AutoConfig: 'modeling_deepseekocr.DeepseekOCRConfig',
      AutoModel: 'modeling_deepseekocr.DeepseekOCRForCausalLM',
    },
    languageArchitecture: 'DeepseekV2ForCausalLM',
    modelType: 'deepseek_vl_v2',
    maxPositions: 8192,
  },
  v2: {
    nameOrPath: 'deepseek-ai/DeepSeek-OCR-2',
    architecture: 'DeepseekOCR2ForCausalLM',
    autoMap: {
      AutoConfig: 'modeling_deepseekocr2.DeepseekOCR2Config',
      AutoModel: 'modeling_deepseekocr2.DeepseekOCR2ForCausalLM',
    },
    languageArchitecture: 'DeepseekV2ForCausalLM',
    modelType: 'deepseek_vl_v2',
    maxPositions: 8192,
  },
  v3: {
    nameOrPath: 'Unlimited-OCR',
    architecture: 'UnlimitedOCRForCausalLM',
    autoMap: {
      AutoConfig: 'modeling_unlimitedocr.UnlimitedOCRConfig',
      AutoModel: 'modeling_unlimitedocr.UnlimitedOCRForCausalLM',
    },
    languageArchitecture: 'DeepseekOCRForCausalLM',
    modelType: 'unlimited-ocr',
    maxPositions: 32768,
  },
};

const LANGUAGE_AUTO_MAP = {
  AutoConfig: 'configuration_deepseekv2.DeepseekV2Config',
  AutoModel: 'modeling_deepseek.DeepseekV2Model',
  AutoModelForCausalLM: 'modeling_deepseek.DeepseekV2ForCausalLM',
};

/** A fresh config.json object of one variant and size, keys in the order the real file has them. */
export function modelConfig(variant: Variant, size: ModelSize): ConfigJson {
  const id = IDENTITY[variant];
  const decoder = { full: FULL_DECODER, wide: WIDE_DECODER, tiny: TINY_DECODER }[size];
  const vision = visionConfig(variant, size);
  const { head, tail } = decoderKeys(variant, decoder, id.maxPositions);
  const slidingWindowSize = variant === 'v3' ? { sliding_window_size: V3_SLIDING_WINDOW } : {};
  return structuredClone<ConfigJson>({
    _name_or_path: id.nameOrPath,
    candidate_resolutions: [[1024, 1024]],
    global_view_pos: 'head',
    architectures: [id.architecture],
    auto_map: id.autoMap,
    language_config: {
      architectures: [id.languageArchitecture],
      auto_map: LANGUAGE_AUTO_MAP,
      ...head,
      torch_dtype: 'bfloat16',
      ...tail,
      ...slidingWindowSize,
    },
    model_type: id.modelType,
    projector_config: {
      input_dim: projectorInputDim(vision),
      model_type: 'mlp_projector',
      n_embed: decoder.hidden,
      projector_type: 'linear',
    },
    tile_tag: '2D',
    torch_dtype: 'bfloat16',
    transformers_version: '4.46.3',
    vision_config: vision,
    ...head,
    ...tail,
    ...slidingWindowSize,
    ...(variant === 'v3' ? { sliding_window: V3_SLIDING_WINDOW } : {}),
  });
}

function visionConfig(variant: Variant, size: ModelSize): VisionConfig {
  const full = size === 'full';
  const common = { image_size: 1024, mlp_ratio: 3.7362 };
  if (variant === 'v2') {
    return {
      ...common,
      model_name: 'deepencoderv2',
      model_type: 'vision',
      width: { 'qwen2-0-5b': full ? FULL_QWEN2 : TINY_QWEN2, sam_vit_b: full ? FULL_SAM : TINY_V2_SAM },
    };
  }
  return {
    ...common,
    model_name: 'deeplip_b_l',
    model_type: 'vision',
    width: { 'clip-l-14-224': full ? FULL_CLIP : TINY_CLIP, sam_vit_b: full ? FULL_SAM : TINY_SAM },
  };
}

/** v1/v3: CLIP output ++ SAM output (net_3 width); v2: Qwen2 query outputs. */
function projectorInputDim(vision: VisionConfig): number {
  const qwen2 = vision.width['qwen2-0-5b'];
  if (qwen2) return qwen2.dim;
  const clip = vision.width['clip-l-14-224'];
  if (!clip) throw new Error('vision_config.width needs clip-l-14-224 or qwen2-0-5b');
  return clip.width + vision.width.sam_vit_b.downsample_channels[1];
}

function decoderKeys(variant: Variant, d: DecoderShape, maxPositions: number) {
  const head = {
    bos_token_id: 0,
    eos_token_id: 1,
    first_k_dense_replace: 1,
    hidden_size: d.hidden,
    intermediate_size: d.intermediate,
    kv_lora_rank: null,
    lm_head: true,
    max_position_embeddings: maxPositions,
    moe_intermediate_size: d.moeIntermediate,
    n_group: 1,
    n_routed_experts: d.routedExperts,
    n_shared_experts: d.sharedExperts,
    num_attention_heads: d.heads,
    num_experts_per_tok: d.expertsPerToken,
    num_hidden_layers: d.layers,
    num_key_value_heads: d.heads,
    q_lora_rank: null,
    qk_nope_head_dim: 0,
    qk_rope_head_dim: 0,
    rm_head: false,
    topk_group: 1,
    topk_method: 'greedy' as const,
  };
  // v1/v2 store v_head_dim 0 (vLLM patches it to head_dim); v3 stores head_dim.
  const tail = { use_mla: false, v_head_dim: variant === 'v3' ? d.hidden / d.heads : 0, vocab_size: VOCAB_SIZE };
  return { head, tail };
}
