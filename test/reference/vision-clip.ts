// Reference CLIP-L/14 fed with SAM features instead of its own patch conv (docs/model.md §3.3, §5.3): CLS prepended,
// position table (CLS row kept, 16×16 grid rows bicubic-antialias resized when the grid differs), pre_layrnorm,
// pre-norm blocks with bidirectional MHA and quick_gelu, no final norm, CLS dropped.

import type { ClipConfig } from './vision-config.js';
import { resizeBicubicAntialias } from './vision-interpolate.js';
import { type Linear, type TensorLoader, addInPlace, affine, layerNorm, mlp, quickGelu } from './vision-math.js';
import { attend } from './reference-math.js';

const EPS = 1e-5; // CLIP LayerNorms (§3.3)

interface Norm {
  weight: Float32Array;
  bias: Float32Array;
}

interface ClipLayer {
  norm1: Norm;
  qkv: Linear; // [3·width, width]; output index = s·width + head·headDim + d, s ∈ {q, k, v}
  out: Linear; // [width, width]
  norm2: Norm;
  fc1: Linear; // [mlpDim, width]
  fc2: Linear; // [width, mlpDim]
}

export interface ClipWeights {
  config: ClipConfig;
  classEmbedding: Float32Array; // [width]
  positions: Float32Array; // [1 + positionGrid², width]: row 0 CLS, then the grid row-major
  preNorm: Norm;
  layers: ClipLayer[];
}

/** CLIP tensors (`model.vision_model.*`; the unused patch_embedding is not read). */
export function loadClip(tensor: TensorLoader, config: ClipConfig): ClipWeights {
  const { width, heads, mlpDim, positionGrid } = config;
  if (width % heads !== 0) throw new Error(`CLIP width ${width} is not a multiple of its ${heads} heads`);
  const prefix = 'model.vision_model';
  const linear = (name: string, rows: number, cols: number): Linear => ({
    rows,
    cols,
    data: tensor(`${name}.weight`, [rows, cols]),
    bias: tensor(`${name}.bias`, [rows]),
  });
  const norm = (name: string): Norm => ({
    weight: tensor(`${name}.weight`, [width]),
    bias: tensor(`${name}.bias`, [width]),
  });
  const layers: ClipLayer[] = [];
  for (let i = 0; i < config.layers; i++) {
    const l = `${prefix}.transformer.layers.${i}`;
    layers.push({
      norm1: norm(`${l}.layer_norm1`),
      qkv: linear(`${l}.self_attn.qkv_proj`, 3 * width, width),
      out: linear(`${l}.self_attn.out_proj`, width, width),
      norm2: norm(`${l}.layer_norm2`),
      fc1: linear(`${l}.mlp.fc1`, mlpDim, width),
      fc2: linear(`${l}.mlp.fc2`, width, mlpDim),
    });
  }
  return {
    config,
    classEmbedding: tensor(`${prefix}.embeddings.class_embedding`, [width]),
    positions: tensor(`${prefix}.embeddings.position_embedding.weight`, [1 + positionGrid * positionGrid, width]),
    preNorm: norm(`${prefix}.pre_layrnorm`),
    layers,
  };
}

/** CLIP on SAM tokens (row-major side×side grid): tokens[n][width] → [n][width], CLS dropped. */
export function clipForward(clip: ClipWeights, samTokens: Float64Array[]): Float64Array[] {
  const { width, heads, positionGrid: grid } = clip.config;
  const n = samTokens.length;
  const side = Math.round(Math.sqrt(n));
  if (side * side !== n || samTokens[0].length !== width) {
    throw new Error(`CLIP input: ${n} tokens of ${samTokens[0].length} channels, expected a square grid of ${width}`);
  }
  const gridPositions = clip.positions.subarray(width);
  const positions =
    side === grid ? gridPositions : resizeBicubicAntialias(gridPositions, grid, grid, width, side, side);
  const cls = Float64Array.from(clip.classEmbedding);
  addInPlace(cls, clip.positions.subarray(0, width));
  const patches = samTokens.map((row, t) => {
    const patch = Float64Array.from(row);
    addInPlace(patch, positions.subarray(t * width, (t + 1) * width));
    return patch;
  });
  let x = [cls, ...patches].map((row) => layerNorm(row, clip.preNorm.weight, clip.preNorm.bias, EPS));
  const headDim = width / heads;
  const everyone = x.map((_, j) => j);
  for (const layer of clip.layers) {
    const qkv = x.map((row) => affine(layer.qkv, layerNorm(row, layer.norm1.weight, layer.norm1.bias, EPS)));
    const keys = qkv.map((row) => row.subarray(width, 2 * width));
    const values = qkv.map((row) => row.subarray(2 * width));
    x = x.map((row, i) => {
      const h = Float64Array.from(row);
      const mixed = attend(qkv[i].subarray(0, width), keys, values, everyone, heads, heads, headDim);
      addInPlace(h, affine(layer.out, mixed));
      addInPlace(h, mlp(layer.fc1, layer.fc2, quickGelu, layerNorm(h, layer.norm2.weight, layer.norm2.bias, EPS)));
      return h;
    });
  }
  return x.slice(1);
}
