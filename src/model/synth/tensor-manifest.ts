// Every tensor of a checkpoint (docs/model.md §3), derived from its config.json, with the distribution its
// synthetic values are drawn from. Shapes are PyTorch order: Linear [out, in], Conv2d [out, in, kH, kW].
//
// Synthetic initialisation, chosen so a forward pass stays well conditioned:
//   tensor                                                    mean  std
//   Linear / Conv2d weight (lm_head and MoE router included)  0     1/√fan_in  (fan_in = in · kH · kW)
//   Linear / Conv2d bias                                      0     0.02
//   RMSNorm / LayerNorm / LayerNorm2d weight                  1     0.1
//   LayerNorm / LayerNorm2d bias                              0     0.02
//   token embedding (model.embed_tokens)                      0     1
//   learned vectors: SAM pos_embed, CLIP class_embedding and
//     position_embedding, Qwen2 query_768/query_1024,
//     image_newline, view_seperator                           0     0.5
//   SAM relative-position tables rel_pos_h / rel_pos_w        0     0.02

import { VISION_CODE_DEFAULTS } from '../../engine/vision-config.js';
import type { ClipWidthConfig, ConfigJson, Qwen2WidthConfig, SamWidthConfig } from './model-configs.js';
import type { NormalInit } from './random-weights.js';

export interface TensorSpec {
  name: string;
  shape: number[];
  dtype: 'BF16';
  init: NormalInit;
  /** In every published checkpoint but never read by the engine (a checkpoint may lack it). */
  unread?: true;
}

/** The v2 encoder's local tile side in pixels (hard-coded in the reference code, docs/model.md §4.3). */
const V2_TILE_SIZE = 768;
/** net_2 and net_3 each halve the SAM grid. */
const SAM_DOWNSAMPLE = 4;

/** All tensors of the checkpoint described by `config`, in model order. */
export function tensorManifest(config: ConfigJson): TensorSpec[] {
  const vision = config.vision_config;
  const sam = vision.width.sam_vit_b;
  const samPatch = sam.patch_size ?? VISION_CODE_DEFAULTS.sam.patch_size;
  const tensors = [...decoderTensors(config)];
  if (vision.model_name === 'deepencoderv2') {
    const qwen2 = required(vision.width['qwen2-0-5b'], 'qwen2-0-5b');
    const queryTokens = (side: number) => (side / (samPatch * SAM_DOWNSAMPLE)) ** 2;
    tensors.push(
      ...samTensors(sam, vision.image_size, qwen2.dim),
      ...qwen2Tensors(qwen2, { query_768: queryTokens(V2_TILE_SIZE), query_1024: queryTokens(vision.image_size) }),
      ...projectorTensors(config, false),
    );
  } else {
    const clip = required(vision.width['clip-l-14-224'], 'clip-l-14-224');
    tensors.push(
      ...samTensors(sam, vision.image_size, sam.downsample_channels[1]),
      ...clipTensors(clip),
      ...projectorTensors(config, true),
    );
  }
  return tensors;
}

export function elementCount(spec: Pick<TensorSpec, 'shape'>): number {
  return spec.shape.reduce((a, b) => a * b, 1);
}

function required<T>(value: T | undefined, key: string): T {
  if (value === undefined) throw new Error(`config.json: vision_config.width.${key} is missing`);
  return value;
}

const weight = (name: string, shape: number[]): TensorSpec => {
  const fanIn = shape.slice(1).reduce((a, b) => a * b, 1);
  return { name, shape, dtype: 'BF16', init: { mean: 0, std: 1 / Math.sqrt(fanIn) } };
};
const bias = (name: string, n: number): TensorSpec => ({ name, shape: [n], dtype: 'BF16', init: { mean: 0, std: 0.02 } });
const normWeight = (name: string, n: number): TensorSpec => ({ name, shape: [n], dtype: 'BF16', init: { mean: 1, std: 0.1 } });
const learned = (name: string, shape: number[]): TensorSpec => ({ name, shape, dtype: 'BF16', init: { mean: 0, std: 0.5 } });
/** Linear with bias: weight [out, in], bias [out]. */
const linear = (name: string, out: number, inp: number) => [weight(`${name}.weight`, [out, inp]), bias(`${name}.bias`, out)];
/** LayerNorm: weight and bias [n]. */
const layerNorm = (name: string, n: number) => [normWeight(`${name}.weight`, n), bias(`${name}.bias`, n)];

/** docs/model.md §3.6: embeddings, pre-norm layers (dense FFN first, then routed + shared experts), lm_head. */
function decoderTensors(c: ConfigJson): TensorSpec[] {
  const hidden = c.hidden_size;
  const headDim = hidden / c.num_attention_heads;
  const kvWidth = c.num_key_value_heads * headDim;
  const swiglu = (prefix: string, width: number) => [
    weight(`${prefix}.gate_proj.weight`, [width, hidden]),
    weight(`${prefix}.up_proj.weight`, [width, hidden]),
    weight(`${prefix}.down_proj.weight`, [hidden, width]),
  ];
  const tensors: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [c.vocab_size, hidden], dtype: 'BF16', init: { mean: 0, std: 1 } }];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    tensors.push(
      normWeight(`${p}.input_layernorm.weight`, hidden),
      weight(`${p}.self_attn.q_proj.weight`, [hidden, hidden]),
      weight(`${p}.self_attn.k_proj.weight`, [kvWidth, hidden]),
      weight(`${p}.self_attn.v_proj.weight`, [kvWidth, hidden]),
      weight(`${p}.self_attn.o_proj.weight`, [hidden, hidden]),
      normWeight(`${p}.post_attention_layernorm.weight`, hidden),
    );
    if (l < c.first_k_dense_replace) {
      tensors.push(...swiglu(`${p}.mlp`, c.intermediate_size));
      continue;
    }
    tensors.push(weight(`${p}.mlp.gate.weight`, [c.n_routed_experts, hidden]));
    for (let e = 0; e < c.n_routed_experts; e++) tensors.push(...swiglu(`${p}.mlp.experts.${e}`, c.moe_intermediate_size));
    if (c.n_shared_experts > 0) tensors.push(...swiglu(`${p}.mlp.shared_experts`, c.n_shared_experts * c.moe_intermediate_size));
  }
  tensors.push(normWeight('model.norm.weight', hidden), weight('lm_head.weight', [c.vocab_size, hidden]));
  return tensors;
}

/** docs/model.md §3.2: SAM ViT-B; `net3Out` is the CLIP width (v1/v3) or the Qwen2 dim (v2). */
function samTensors(sam: SamWidthConfig, imageSize: number, net3Out: number): TensorSpec[] {
  const d = VISION_CODE_DEFAULTS.sam;
  const width = sam.width;
  const patch = sam.patch_size ?? d.patch_size;
  const grid = imageSize / patch; // 64
  const headDim = width / sam.heads; // 64
  const window = sam.window_size ?? d.window_size; // 14
  const mlp = sam.mlp_dim ?? width * d.mlp_ratio; // 3072
  const neck = sam.neck_channels ?? d.neck_channels; // 256
  const [net2Out] = sam.downsample_channels; // 512
  const p = 'model.sam_model';
  const tensors: TensorSpec[] = [
    weight(`${p}.patch_embed.proj.weight`, [width, 3, patch, patch]),
    bias(`${p}.patch_embed.proj.bias`, width),
    learned(`${p}.pos_embed`, [1, grid, grid, width]),
  ];
  for (let i = 0; i < sam.layers; i++) {
    const b = `${p}.blocks.${i}`;
    // Relative offsets span 2S − 1 positions, S = window side or the whole grid (global blocks).
    const relPosRows = 2 * (sam.global_attn_indexes.includes(i) ? grid : window) - 1;
    tensors.push(
      ...layerNorm(`${b}.norm1`, width),
      ...linear(`${b}.attn.qkv`, 3 * width, width),
      ...linear(`${b}.attn.proj`, width, width),
      { name: `${b}.attn.rel_pos_h`, shape: [relPosRows, headDim], dtype: 'BF16', init: { mean: 0, std: 0.02 } },
      { name: `${b}.attn.rel_pos_w`, shape: [relPosRows, headDim], dtype: 'BF16', init: { mean: 0, std: 0.02 } },
      ...layerNorm(`${b}.norm2`, width),
      ...linear(`${b}.mlp.lin1`, mlp, width),
      ...linear(`${b}.mlp.lin2`, width, mlp),
    );
  }
  tensors.push(
    weight(`${p}.neck.0.weight`, [neck, width, 1, 1]),
    ...layerNorm(`${p}.neck.1`, neck),
    weight(`${p}.neck.2.weight`, [neck, neck, 3, 3]),
    ...layerNorm(`${p}.neck.3`, neck),
    weight(`${p}.net_2.weight`, [net2Out, neck, 3, 3]),
    weight(`${p}.net_3.weight`, [net3Out, net2Out, 3, 3]),
  );
  return tensors;
}

/** docs/model.md §3.3: CLIP-L/14 fed with SAM features (v1/v3). */
function clipTensors(clip: ClipWidthConfig): TensorSpec[] {
  const width = clip.width; // 1024
  const mlp = clip.mlp_dim ?? width * VISION_CODE_DEFAULTS.clip.mlp_ratio; // 4096
  const positions = (clip.image_size / clip.patch_size) ** 2 + 1; // 257: CLS + 16×16
  const p = 'model.vision_model';
  const tensors: TensorSpec[] = [
    learned(`${p}.embeddings.class_embedding`, [width]),
    // SAM's features replace CLIP's patch embeddings (docs/model.md §3.3): the weight is saved, never used.
    { ...weight(`${p}.embeddings.patch_embedding.weight`, [width, 3, clip.patch_size, clip.patch_size]), unread: true },
    learned(`${p}.embeddings.position_embedding.weight`, [positions, width]),
    ...layerNorm(`${p}.pre_layrnorm`, width),
  ];
  for (let i = 0; i < clip.layers; i++) {
    const l = `${p}.transformer.layers.${i}`;
    tensors.push(
      ...layerNorm(`${l}.layer_norm1`, width),
      ...linear(`${l}.self_attn.qkv_proj`, 3 * width, width),
      ...linear(`${l}.self_attn.out_proj`, width, width),
      ...layerNorm(`${l}.layer_norm2`, width),
      ...linear(`${l}.mlp.fc1`, mlp, width),
      ...linear(`${l}.mlp.fc2`, width, mlp),
    );
  }
  return tensors;
}

/** docs/model.md §3.4: Qwen2 encoder and its causal-flow queries (v2). */
function qwen2Tensors(q: Qwen2WidthConfig, queryRows: { query_768: number; query_1024: number }): TensorSpec[] {
  const d = VISION_CODE_DEFAULTS.qwen2;
  const dim = q.dim; // 896
  const kvWidth = (q.kv_heads ?? d.kv_heads) * (dim / (q.heads ?? d.heads)); // 2 × 64
  const mlp = q.mlp_dim ?? d.mlp_dim; // 4864
  const p = 'model.qwen2_model';
  const tensors: TensorSpec[] = [];
  for (let i = 0; i < (q.layers ?? d.layers); i++) {
    const l = `${p}.model.model.layers.${i}`;
    tensors.push(
      normWeight(`${l}.input_layernorm.weight`, dim),
      ...linear(`${l}.self_attn.q_proj`, dim, dim),
      ...linear(`${l}.self_attn.k_proj`, kvWidth, dim),
      ...linear(`${l}.self_attn.v_proj`, kvWidth, dim),
      weight(`${l}.self_attn.o_proj.weight`, [dim, dim]),
      normWeight(`${l}.post_attention_layernorm.weight`, dim),
      weight(`${l}.mlp.gate_proj.weight`, [mlp, dim]),
      weight(`${l}.mlp.up_proj.weight`, [mlp, dim]),
      weight(`${l}.mlp.down_proj.weight`, [dim, mlp]),
    );
  }
  tensors.push(
    normWeight(`${p}.model.model.norm.weight`, dim),
    learned(`${p}.query_768.weight`, [queryRows.query_768, dim]), // [144, 896]
    learned(`${p}.query_1024.weight`, [queryRows.query_1024, dim]), // [256, 896]
  );
  return tensors;
}

/** docs/model.md §3.5: linear projector, row separator (v1/v3 only) and view separator. */
function projectorTensors(c: ConfigJson, withImageNewline: boolean): TensorSpec[] {
  const { input_dim, n_embed } = c.projector_config;
  return [
    ...linear('model.projector.layers', n_embed, input_dim),
    ...(withImageNewline ? [learned('model.image_newline', [n_embed])] : []),
    learned('model.view_seperator', [n_embed]),
  ];
}
