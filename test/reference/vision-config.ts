// Vision-encoder hyper-parameters read from config.json (docs/model.md §1.2, §3.2–3.5). The published configs leave
// some dimensions to the model code; tiny test configs state them as extra keys, which take precedence:
//   vision_config.width.sam_vit_b:     patch_size, window_size, mlp_dim, neck_channels
//   vision_config.width.clip-l-14-224: mlp_dim
//   vision_config.width.qwen2-0-5b:    layers, heads, kv_heads, mlp_dim
// The code defaults below are taken from the spec, not from the engine, so the reference stays independent.

/** SAM ViT-B (§3.2, §5.1). net_3's output width is not here: it comes from the tensor shape (§1.2, V2 pitfall). */
export interface SamConfig {
  width: number; // 768
  layers: number; // 12
  heads: number; // 12
  globalBlocks: number[]; // global_attn_indexes [2, 5, 8, 11]
  patchSize: number; // 16 (patch conv k16 s16)
  windowSize: number; // 14
  mlpDim: number; // 3072 = 4 · width
  neckChannels: number; // 256
  net2Channels: number; // downsample_channels[0] = 512
}

/** CLIP-L/14 fed with SAM features (§3.3, §5.3). */
export interface ClipConfig {
  width: number; // 1024
  layers: number; // 24
  heads: number; // 16
  mlpDim: number; // 4096 = 4 · width
  positionGrid: number; // image_size / patch_size = 16: the position table holds 1 + 16² rows
}

/** Qwen2-0.5B-style encoder with causal-flow queries (§3.4, §5.4). */
export interface Qwen2EncoderConfig {
  dim: number; // 896
  layers: number; // 24
  heads: number; // 14
  kvHeads: number; // 2
  mlpDim: number; // 4864
  ropeTheta: number; // 1,000,000
  rmsNormEps: number; // 1e-6
}

export type EncoderConfig = { kind: 'clip'; clip: ClipConfig } | { kind: 'qwen2'; qwen2: Qwen2EncoderConfig };

export interface VisionConfig {
  imageSize: number; // vision_config.image_size = 1024: SAM's pos_embed grid is imageSize / patchSize
  sam: SamConfig;
  encoder: EncoderConfig;
  projectorInput: number; // projector_config.input_dim: 2048 (CLIP ++ SAM) or 896 (Qwen2)
  embedWidth: number; // projector_config.n_embed = decoder hidden size 1280
}

/** Parses the vision parts of config.json, refusing projector types the reference does not implement. */
export function readVisionConfig(json: Record<string, unknown>): VisionConfig {
  const vision = object(json, 'vision_config');
  const widths = object(vision, 'width', 'vision_config.');
  const samJson = object(widths, 'sam_vit_b', 'vision_config.width.');
  const samWidth = integer(samJson, 'width');
  const downsample = samJson['downsample_channels'];
  if (!Array.isArray(downsample) || typeof downsample[0] !== 'number') {
    throw new Error('config.json: vision_config.width.sam_vit_b.downsample_channels must list the net_2 width first');
  }
  const globalBlocks = samJson['global_attn_indexes'];
  if (!Array.isArray(globalBlocks) || !globalBlocks.every((i) => Number.isInteger(i))) {
    throw new Error('config.json: vision_config.width.sam_vit_b.global_attn_indexes must be a list of block indices');
  }
  const sam: SamConfig = {
    width: samWidth,
    layers: integer(samJson, 'layers'),
    heads: integer(samJson, 'heads'),
    globalBlocks: globalBlocks as number[],
    patchSize: integer(samJson, 'patch_size', 16),
    windowSize: integer(samJson, 'window_size', 14),
    mlpDim: integer(samJson, 'mlp_dim', 4 * samWidth),
    neckChannels: integer(samJson, 'neck_channels', 256),
    net2Channels: downsample[0] as number,
  };

  const modelName = vision['model_name'];
  let encoder: EncoderConfig;
  if (modelName === 'deepencoderv2') {
    const q = object(widths, 'qwen2-0-5b', 'vision_config.width.');
    encoder = {
      kind: 'qwen2',
      qwen2: {
        dim: integer(q, 'dim'),
        layers: integer(q, 'layers', 24),
        heads: integer(q, 'heads', 14),
        kvHeads: integer(q, 'kv_heads', 2),
        mlpDim: integer(q, 'mlp_dim', 4864),
        ropeTheta: 1_000_000,
        rmsNormEps: 1e-6,
      },
    };
  } else if (modelName === 'deeplip_b_l') {
    const c = object(widths, 'clip-l-14-224', 'vision_config.width.');
    const width = integer(c, 'width');
    encoder = {
      kind: 'clip',
      clip: {
        width,
        layers: integer(c, 'layers'),
        heads: integer(c, 'heads'),
        mlpDim: integer(c, 'mlp_dim', 4 * width),
        positionGrid: integer(c, 'image_size') / integer(c, 'patch_size'),
      },
    };
  } else {
    throw new Error(
      `config.json: vision_config.model_name ${String(modelName)} is neither deeplip_b_l nor deepencoderv2`,
    );
  }

  const projector = object(json, 'projector_config');
  if (projector['projector_type'] !== 'linear') {
    throw new Error(`config.json: projector_type ${String(projector['projector_type'])}; only linear is implemented`);
  }
  return {
    imageSize: integer(vision, 'image_size'),
    sam,
    encoder,
    projectorInput: integer(projector, 'input_dim'),
    embedWidth: integer(projector, 'n_embed'),
  };
}

function object(json: Record<string, unknown>, key: string, path = ''): Record<string, unknown> {
  const value = json[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`config.json: ${path}${key} must be an object`);
  }
  return value as Record<string, unknown>;
}

function integer(json: Record<string, unknown>, key: string, fallback?: number): number {
  const value = json[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new Error(`config.json: vision key ${key} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
