// Vision dimensions of a checkpoint (docs/model.md §1.2, §3.2–3.5, §5), read from config.json's
// vision_config and projector_config. The published configs leave several dimensions to the
// reference code; those come from VISION_CODE_DEFAULTS unless a (tiny test) config states them.
import type { ModelConfig } from './model-config.js';
import { ModelConfigError } from './model-config.js';

/** Vision dimensions the reference code hard-codes (docs/model.md §1.2, §5). */
export const VISION_CODE_DEFAULTS = {
  sam: { patch_size: 16, window_size: 14, mlp_ratio: 4, neck_channels: 256, norm_eps: 1e-6 },
  clip: { mlp_ratio: 4, norm_eps: 1e-5 },
  qwen2: {
    layers: 24, heads: 14, kv_heads: 2, mlp_dim: 4864, rms_norm_eps: 1e-6, rope_theta: 1e6,
    /** View sides with a learned query set (query_768, query_1024): the only sides V2 encodes. */
    query_sides: [768, 1024],
  },
} as const;

/** deepencoder = SAM + CLIP (V1, V3); deepencoderv2 = SAM + Qwen2 (V2). */
export type VisionKind = 'deepencoder' | 'deepencoderv2';

/** SAM ViT-B (§3.2, §5.1). */
export interface SamDims {
  width: number;
  layers: number;
  heads: number;
  patchSize: number;
  windowSize: number;
  mlpDim: number;
  /** Side of the stored pos_embed grid: vision_config.image_size / patchSize (64). */
  posGrid: number;
  /** Blocks attending over the whole grid; the others attend within windowSize² windows. */
  globalBlocks: number[];
  neckChannels: number;
  net2Channels: number;
  /** net_3 output = the encoder's input width: CLIP width (V1/V3) or Qwen2 dim (V2). */
  net3Channels: number;
  normEps: number;
}

/** CLIP-L/14 fed with SAM features (§3.3, §5.3). */
export interface ClipDims {
  width: number;
  layers: number;
  heads: number;
  mlpDim: number;
  /** Side of the position-embedding grid (image_size / patch_size = 16); the table has posGrid² + 1 rows. */
  posGrid: number;
  normEps: number;
}

/** Qwen2 decoder used as an encoder with causal-flow queries (§3.4, §5.4). */
export interface Qwen2Dims {
  dim: number;
  layers: number;
  heads: number;
  kvHeads: number;
  mlpDim: number;
  rmsEps: number;
  ropeTheta: number;
  /** Accepted view sides; the checkpoint holds query_<side>.weight for each. */
  querySides: number[];
}

/** Everything the native vision encoder needs (native/common/vision_dims.h VisionDims). */
export interface VisionDims {
  kind: VisionKind;
  sam: SamDims;
  clip?: ClipDims;
  qwen2?: Qwen2Dims;
  /** projector_config.input_dim: CLIP width + net_3 channels (V1/V3) or the Qwen2 dim (V2). */
  projectorInput: number;
  /** projector_config.n_embed = the decoder's hidden size. */
  embed: number;
}

type Json = Record<string, unknown>;

function object(value: unknown, key: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ModelConfigError(`config.json: ${key} must be an object`);
  }
  return value as Json;
}

function positive(section: Json, key: string, where: string, fallback?: number): number {
  const value = section[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ModelConfigError(`config.json: ${where}.${key} must be a positive integer (got ${JSON.stringify(value)})`);
  }
  return value;
}

function integers(section: Json, key: string, where: string): number[] {
  const value = section[key];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0)) {
    throw new ModelConfigError(`config.json: ${where}.${key} must be a list of non-negative integers`);
  }
  return value as number[];
}

function divides(whole: number, part: number, what: string): number {
  if (whole % part !== 0) throw new ModelConfigError(`config.json: ${what} (${whole} / ${part}) is not an integer`);
  return whole / part;
}

/**
 * The vision dimensions of `config`, or null when config.json has no vision_config (decoder-only
 * test checkpoints). Throws ModelConfigError naming the key when a dimension is missing or the
 * components do not fit together.
 */
export function parseVisionDims(config: ModelConfig): VisionDims | null {
  const raw = config.raw;
  if (raw.vision_config === undefined || raw.vision_config === null) return null;
  const vision = object(raw.vision_config, 'vision_config');
  const widths = object(vision.width, 'vision_config.width');
  const kind: VisionKind = config.variant === 'v2' ? 'deepencoderv2' : 'deepencoder';
  const projector = object(raw.projector_config, 'projector_config');
  const projectorInput = positive(projector, 'input_dim', 'projector_config');
  const embed = positive(projector, 'n_embed', 'projector_config');
  if (embed !== config.decoder.hidden) {
    throw new ModelConfigError(`config.json: projector_config.n_embed ${embed} differs from hidden_size ${config.decoder.hidden}`);
  }

  const s = object(widths.sam_vit_b, 'vision_config.width.sam_vit_b');
  const w = 'vision_config.width.sam_vit_b';
  const d = VISION_CODE_DEFAULTS.sam;
  const samWidth = positive(s, 'width', w);
  const samLayers = positive(s, 'layers', w);
  const patchSize = positive(s, 'patch_size', w, d.patch_size);
  const globalBlocks = integers(s, 'global_attn_indexes', w);
  if (globalBlocks.some((i) => i >= samLayers)) {
    throw new ModelConfigError(`config.json: ${w}.global_attn_indexes must lie within its ${samLayers} layers`);
  }
  const downsample = integers(s, 'downsample_channels', w);
  if (downsample.length !== 2 || downsample[0] === 0) {
    throw new ModelConfigError(`config.json: ${w}.downsample_channels must list two positive widths [net_2, net_3]`);
  }
  const samHeads = positive(s, 'heads', w);
  divides(samWidth, samHeads, `${w}.width / heads`);

  let clip: ClipDims | undefined;
  let qwen2: Qwen2Dims | undefined;
  let net3Channels: number;
  if (kind === 'deepencoder') {
    const c = object(widths['clip-l-14-224'], 'vision_config.width.clip-l-14-224');
    const cw = 'vision_config.width.clip-l-14-224';
    const width = positive(c, 'width', cw);
    const heads = positive(c, 'heads', cw);
    divides(width, heads, `${cw}.width / heads`);
    clip = {
      width,
      layers: positive(c, 'layers', cw),
      heads,
      mlpDim: positive(c, 'mlp_dim', cw, width * VISION_CODE_DEFAULTS.clip.mlp_ratio),
      posGrid: divides(positive(c, 'image_size', cw), positive(c, 'patch_size', cw), `${cw}.image_size / patch_size`),
      normEps: VISION_CODE_DEFAULTS.clip.norm_eps,
    };
    // SAM's net_3 output replaces CLIP's patch embeddings, so its width is the CLIP width.
    if (downsample[1] !== width) {
      throw new ModelConfigError(`config.json: ${w}.downsample_channels[1] ${downsample[1]} must equal the CLIP width ${width}`);
    }
    net3Channels = width;
    if (projectorInput !== width + net3Channels) {
      throw new ModelConfigError(
        `config.json: projector_config.input_dim ${projectorInput} must be CLIP width + net_3 width = ${width + net3Channels}`,
      );
    }
  } else {
    const q = object(widths['qwen2-0-5b'], 'vision_config.width.qwen2-0-5b');
    const qw = 'vision_config.width.qwen2-0-5b';
    const qd = VISION_CODE_DEFAULTS.qwen2;
    const dim = positive(q, 'dim', qw);
    const heads = positive(q, 'heads', qw, qd.heads);
    const kvHeads = positive(q, 'kv_heads', qw, qd.kv_heads);
    const headDim = divides(dim, heads, `${qw}.dim / heads`);
    divides(heads, kvHeads, `${qw}.heads / kv_heads`);
    if (headDim % 2 !== 0) throw new ModelConfigError(`config.json: ${qw} head dim ${headDim} must be even for rotary embeddings`);
    qwen2 = {
      dim,
      layers: positive(q, 'layers', qw, qd.layers),
      heads,
      kvHeads,
      mlpDim: positive(q, 'mlp_dim', qw, qd.mlp_dim),
      rmsEps: qd.rms_norm_eps,
      ropeTheta: qd.rope_theta,
      querySides: [...qd.query_sides],
    };
    // The V2 config lists downsample_channels [512, 1024] (copied from V1), but the real net_3
    // weight is [896, 512, 3, 3]: net_3 feeds the Qwen2 encoder, so its width is the Qwen2 dim and
    // downsample_channels[1] is ignored.
    net3Channels = dim;
    if (projectorInput !== dim) {
      throw new ModelConfigError(`config.json: projector_config.input_dim ${projectorInput} must equal the Qwen2 dim ${dim}`);
    }
  }

  const sam: SamDims = {
    width: samWidth,
    layers: samLayers,
    heads: samHeads,
    patchSize,
    windowSize: positive(s, 'window_size', w, d.window_size),
    mlpDim: positive(s, 'mlp_dim', w, samWidth * d.mlp_ratio),
    posGrid: divides(positive(vision, 'image_size', 'vision_config'), patchSize, 'vision_config.image_size / patch_size'),
    globalBlocks,
    neckChannels: positive(s, 'neck_channels', w, d.neck_channels),
    net2Channels: downsample[0],
    net3Channels,
    normEps: d.norm_eps,
  };
  return { kind, sam, clip, qwen2, projectorInput, embed };
}
