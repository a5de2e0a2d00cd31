// Reference SAM ViT-B image encoder (docs/model.md §3.2, §5.1): patch conv, absolute position embedding (bicubic
// antialiased resize when the grid is not the stored one), pre-norm blocks with windowed or global attention and
// a decomposed relative-position bias, then the neck and the two strided convs. Tokens are rows in row-major
// grid order (index = row·side + col), each row one pixel's channel vector (NHWC).

import type { SamConfig } from './vision-config.js';
import { resizeBicubicAntialias, resizeLinear } from './vision-interpolate.js';
import { type Linear, type TensorLoader, addInPlace, affine, gelu, layerNorm, mlp } from './vision-math.js';

const EPS = 1e-6; // SAM LayerNorm and LayerNorm2d (§3.2)

interface Norm {
  weight: Float32Array;
  bias: Float32Array;
}

interface SamAttention {
  heads: number;
  qkv: Linear; // [3·width, width]; output index = s·width + head·headDim + d, s ∈ {q, k, v}
  proj: Linear; // [width, width]
  relPosH: Float32Array; // [relPosLength, headDim]; row r ↔ relative offset r − (S − 1)
  relPosW: Float32Array; // [relPosLength, headDim]
  relPosLength: number; // 2·window − 1 (windowed) or 2·posGrid − 1 (global)
}

interface SamBlock {
  global: boolean;
  norm1: Norm;
  attention: SamAttention;
  norm2: Norm;
  lin1: Linear; // [mlpDim, width]
  lin2: Linear; // [width, mlpDim]
}

export interface SamWeights {
  config: SamConfig;
  patchEmbed: Linear; // conv k=s=patch as [width, 3·patch·patch]
  posEmbed: Float32Array; // [posGrid, posGrid, width]
  posGrid: number; // 64 = image_size / patch
  blocks: SamBlock[];
  neck0: Linear; // conv1×1 [neck, width], no bias
  neck1: Norm; // LayerNorm2d [neck]
  neck2: Linear; // conv3×3 as [neck, neck·9], no bias
  neck3: Norm; // LayerNorm2d [neck]
  net2: Linear; // conv3×3 stride 2 as [net2, neck·9], no bias
  net3: Linear; // conv3×3 stride 2 as [net3, net2·9], no bias
}

/** SAM tensors (`model.sam_model.*`) for a stored pos_embed grid posGrid; net3Channels is net_3's output width. */
export function loadSam(tensor: TensorLoader, config: SamConfig, posGrid: number, net3Channels: number): SamWeights {
  const { width, heads, patchSize: p, windowSize, mlpDim, neckChannels: neck, net2Channels: net2 } = config;
  if (width % heads !== 0) throw new Error(`SAM width ${width} is not a multiple of its ${heads} heads`);
  const headDim = width / heads;
  const prefix = 'model.sam_model';
  const linear = (name: string, rows: number, cols: number, bias = true): Linear => ({
    rows,
    cols,
    data: tensor(`${name}.weight`, [rows, cols]),
    bias: bias ? tensor(`${name}.bias`, [rows]) : null,
  });
  const conv = (name: string, out: number, inp: number, k: number): Linear => ({
    rows: out,
    cols: inp * k * k,
    data: tensor(`${name}.weight`, [out, inp, k, k]),
    bias: null,
  });
  const norm = (name: string, n: number): Norm => ({
    weight: tensor(`${name}.weight`, [n]),
    bias: tensor(`${name}.bias`, [n]),
  });

  const blocks: SamBlock[] = [];
  for (let i = 0; i < config.layers; i++) {
    const b = `${prefix}.blocks.${i}`;
    const global = config.globalBlocks.includes(i);
    const relPosLength = 2 * (global ? posGrid : windowSize) - 1;
    blocks.push({
      global,
      norm1: norm(`${b}.norm1`, width),
      attention: {
        heads,
        qkv: linear(`${b}.attn.qkv`, 3 * width, width),
        proj: linear(`${b}.attn.proj`, width, width),
        relPosH: tensor(`${b}.attn.rel_pos_h`, [relPosLength, headDim]),
        relPosW: tensor(`${b}.attn.rel_pos_w`, [relPosLength, headDim]),
        relPosLength,
      },
      norm2: norm(`${b}.norm2`, width),
      lin1: linear(`${b}.mlp.lin1`, mlpDim, width),
      lin2: linear(`${b}.mlp.lin2`, width, mlpDim),
    });
  }
  return {
    config,
    patchEmbed: {
      rows: width,
      cols: 3 * p * p,
      data: tensor(`${prefix}.patch_embed.proj.weight`, [width, 3, p, p]),
      bias: tensor(`${prefix}.patch_embed.proj.bias`, [width]),
    },
    posEmbed: tensor(`${prefix}.pos_embed`, [1, posGrid, posGrid, width]),
    posGrid,
    blocks,
    neck0: conv(`${prefix}.neck.0`, neck, width, 1),
    neck1: norm(`${prefix}.neck.1`, neck),
    neck2: conv(`${prefix}.neck.2`, neck, neck, 3),
    neck3: norm(`${prefix}.neck.3`, neck),
    net2: conv(`${prefix}.net_2`, net2, neck, 3),
    net3: conv(`${prefix}.net_3`, net3Channels, net2, 3),
  };
}

/** SAM forward of one view: pixels[3, S, S] → tokens[side·side][net3] with side = S / (4·patch). */
export function samForward(sam: SamWeights, pixels: Float32Array, S: number): { tokens: Float64Array[]; side: number } {
  const { patchSize: p, width } = sam.config;
  if (S % p !== 0 || pixels.length !== 3 * S * S) {
    throw new Error(`SAM input: ${pixels.length} values for a ${S}×${S} view with ${p}-pixel patches`);
  }
  const g = S / p;
  let x = patchEmbed(sam.patchEmbed, pixels, S, p);
  const stored = sam.posGrid;
  const pos = g === stored ? sam.posEmbed : resizeBicubicAntialias(sam.posEmbed, stored, stored, width, g, g);
  x.forEach((row, t) => addInPlace(row, pos.subarray(t * width, (t + 1) * width)));
  for (const block of sam.blocks) x = samBlock(block, x, g, sam.config.windowSize);

  const layerNorm2d = (norm: Norm) => (row: Float64Array) => layerNorm(row, norm.weight, norm.bias, EPS);
  x = x.map((row) => affine(sam.neck0, row)).map(layerNorm2d(sam.neck1));
  x = conv3x3(x, g, sam.neck2, 1).tokens.map(layerNorm2d(sam.neck3));
  const net2 = conv3x3(x, g, sam.net2, 2);
  return conv3x3(net2.tokens, net2.side, sam.net3, 2);
}

/** Patch conv (kernel = stride = p, bias): pixels[3, S, S] → tokens[(S/p)²][width]. */
function patchEmbed(layer: Linear, pixels: Float32Array, S: number, p: number): Float64Array[] {
  const g = S / p;
  const patch = new Float64Array(3 * p * p); // (channel, ky, kx) order, as the conv weight [out, 3, p, p]
  const tokens: Float64Array[] = [];
  for (let py = 0; py < g; py++) {
    for (let px = 0; px < g; px++) {
      for (let c = 0; c < 3; c++) {
        for (let ky = 0; ky < p; ky++) {
          for (let kx = 0; kx < p; kx++) patch[(c * p + ky) * p + kx] = pixels[(c * S + py * p + ky) * S + px * p + kx];
        }
      }
      tokens.push(affine(layer, patch));
    }
  }
  return tokens;
}

/** 3×3 conv, padding 1, no bias: tokens[side²][in] → tokens[outSide²][out], outSide = ⌊(side − 1)/stride⌋ + 1. */
function conv3x3(
  tokens: Float64Array[],
  side: number,
  layer: Linear,
  stride: number,
): { tokens: Float64Array[]; side: number } {
  const channels = tokens[0].length;
  const outSide = Math.floor((side - 1) / stride) + 1;
  const out: Float64Array[] = [];
  for (let oy = 0; oy < outSide; oy++) {
    for (let ox = 0; ox < outSide; ox++) {
      const patch = new Float64Array(channels * 9); // (channel, ky, kx) order, zeros outside the grid
      for (let ky = 0; ky < 3; ky++) {
        const y = oy * stride + ky - 1;
        if (y < 0 || y >= side) continue;
        for (let kx = 0; kx < 3; kx++) {
          const x = ox * stride + kx - 1;
          if (x < 0 || x >= side) continue;
          const row = tokens[y * side + x];
          for (let c = 0; c < channels; c++) patch[c * 9 + ky * 3 + kx] = row[c];
        }
      }
      out.push(affine(layer, patch));
    }
  }
  return { tokens: out, side: outSide };
}

/** One pre-norm block on the g×g grid: h = x + Attn(LN1(x)); h + MLP(LN2(h)), exact GELU: [g²][C] → [g²][C]. */
function samBlock(block: SamBlock, x: Float64Array[], g: number, window: number): Float64Array[] {
  const normed = x.map((row) => layerNorm(row, block.norm1.weight, block.norm1.bias, EPS));
  const attended = block.global
    ? gridAttention(normed, g, g, block.attention)
    : windowUnpartition(
        windowPartition(normed, g, g, window).map((w) => gridAttention(w, window, window, block.attention)),
        g,
        g,
        window,
      );
  return x.map((row, t) => {
    const h = Float64Array.from(row);
    addInPlace(h, attended[t]);
    addInPlace(h, mlp(block.lin1, block.lin2, gelu, layerNorm(h, block.norm2.weight, block.norm2.bias, EPS)));
    return h;
  });
}

/**
 * window_partition: tokens[H·W] → ⌈H/w⌉·⌈W/w⌉ windows in row-major window order, each w·w rows in row-major
 * order; positions past the bottom/right edge (padding up to multiples of w) are zero rows.
 */
export function windowPartition(tokens: Float64Array[], H: number, W: number, w: number): Float64Array[][] {
  const channels = tokens[0].length;
  const windows: Float64Array[][] = [];
  for (let wy = 0; wy < Math.ceil(H / w); wy++) {
    for (let wx = 0; wx < Math.ceil(W / w); wx++) {
      const rows: Float64Array[] = [];
      for (let i = 0; i < w; i++) {
        for (let j = 0; j < w; j++) {
          const y = wy * w + i;
          const x = wx * w + j;
          rows.push(y < H && x < W ? tokens[y * W + x] : new Float64Array(channels));
        }
      }
      windows.push(rows);
    }
  }
  return windows;
}

/** window_unpartition: windows as windowPartition lays them out → tokens[H·W], padding dropped. */
export function windowUnpartition(windows: Float64Array[][], H: number, W: number, w: number): Float64Array[] {
  const perRow = Math.ceil(W / w);
  const tokens: Float64Array[] = [];
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      tokens.push(windows[Math.floor(y / w) * perRow + Math.floor(x / w)][(y % w) * w + (x % w)]);
    }
  }
  return tokens;
}

/**
 * get_rel_pos for equal query and key sizes S: table[length, d] → R[S, S, d] with R[qi, ki] = T[qi − ki + S − 1],
 * T = the table linearly resized (align_corners false) to 2S − 1 rows when length ≠ 2S − 1.
 */
export function relativePositionRows(
  table: ArrayLike<number>,
  length: number,
  headDim: number,
  S: number,
): Float64Array {
  const rows = 2 * S - 1;
  const resized = length === rows ? table : resizeLinear(table, length, headDim, rows);
  const R = new Float64Array(S * S * headDim);
  for (let qi = 0; qi < S; qi++) {
    for (let ki = 0; ki < S; ki++) {
      const source = (qi - ki + S - 1) * headDim;
      const target = (qi * S + ki) * headDim;
      for (let c = 0; c < headDim; c++) R[target + c] = resized[source + c];
    }
  }
  return R;
}

/**
 * The two terms of the decomposed relative-position bias of one head on an H×W grid, from the UNSCALED queries
 * q[H·W, d]: relH[n, kh] = Σc q[n, c]·Rh[qh, kh, c], relW[n, kw] = Σc q[n, c]·Rw[qw, kw, c] with n = qh·W + qw;
 * bias[n, kh·W + kw] = relH[n, kh] + relW[n, kw]. Rh[H, H, d], Rw[W, W, d] from relativePositionRows.
 */
export function relativePositionTerms(
  q: Float64Array,
  H: number,
  W: number,
  Rh: Float64Array,
  Rw: Float64Array,
  headDim: number,
): { relH: Float64Array; relW: Float64Array } {
  const relH = new Float64Array(H * W * H);
  const relW = new Float64Array(H * W * W);
  for (let qh = 0; qh < H; qh++) {
    for (let qw = 0; qw < W; qw++) {
      const n = qh * W + qw;
      const qBase = n * headDim;
      for (let kh = 0; kh < H; kh++) {
        const rBase = (qh * H + kh) * headDim;
        let sum = 0;
        for (let c = 0; c < headDim; c++) sum += q[qBase + c] * Rh[rBase + c];
        relH[n * H + kh] = sum;
      }
      for (let kw = 0; kw < W; kw++) {
        const rBase = (qw * W + kw) * headDim;
        let sum = 0;
        for (let c = 0; c < headDim; c++) sum += q[qBase + c] * Rw[rBase + c];
        relW[n * W + kw] = sum;
      }
    }
  }
  return { relH, relW };
}

/**
 * Multi-head self-attention over all tokens of an H×W grid (a window or the whole image), including the qkv and
 * output projections: logits = q·k/√d + decomposed rel-pos bias; tokens[H·W][C] → [H·W][C].
 */
function gridAttention(tokens: Float64Array[], H: number, W: number, attention: SamAttention): Float64Array[] {
  const N = H * W;
  const width = tokens[0].length;
  const d = width / attention.heads;
  const qkv = tokens.map((row) => affine(attention.qkv, row));
  const Rh = relativePositionRows(attention.relPosH, attention.relPosLength, d, H);
  const Rw = relativePositionRows(attention.relPosW, attention.relPosLength, d, W);
  const mixed = tokens.map(() => new Float64Array(width));
  const q = new Float64Array(N * d); // [N, d]
  const k = new Float64Array(N * d); // [N, d]
  const vT = new Float64Array(d * N); // [d, N]: values transposed so the weighted sums read contiguously
  for (let h = 0; h < attention.heads; h++) {
    for (let n = 0; n < N; n++) {
      for (let c = 0; c < d; c++) {
        q[n * d + c] = qkv[n][h * d + c];
        k[n * d + c] = qkv[n][width + h * d + c];
        vT[c * N + n] = qkv[n][2 * width + h * d + c];
      }
    }
    const { relH, relW } = relativePositionTerms(q, H, W, Rh, Rw, d);
    attendHead(q, k, vT, relH, relW, H, W, d, mixed, h * d);
  }
  return mixed.map((row) => affine(attention.proj, row));
}

/**
 * One head's softmax(q·k/√d + relH + relW)·v for every query of an H×W grid: q, k[N, d], vT[d, N], relH[N, H],
 * relW[N, W]; writes out[n][offset … offset + d).
 */
function attendHead(
  q: Float64Array,
  k: Float64Array,
  vT: Float64Array,
  relH: Float64Array,
  relW: Float64Array,
  H: number,
  W: number,
  d: number,
  out: Float64Array[],
  offset: number,
): void {
  const N = H * W;
  const scale = 1 / Math.sqrt(d);
  const weights = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    const qBase = n * d;
    let max = -Infinity;
    for (let kh = 0; kh < H; kh++) {
      const biasH = relH[n * H + kh];
      for (let kw = 0; kw < W; kw++) {
        const m = kh * W + kw;
        const kBase = m * d;
        let dot = 0;
        for (let c = 0; c < d; c++) dot += q[qBase + c] * k[kBase + c];
        const logit = dot * scale + biasH + relW[n * W + kw];
        weights[m] = logit;
        if (logit > max) max = logit;
      }
    }
    let sum = 0;
    for (let m = 0; m < N; m++) {
      weights[m] = Math.exp(weights[m] - max);
      sum += weights[m];
    }
    const row = out[n];
    for (let c = 0; c < d; c++) {
      const vBase = c * N;
      let total = 0;
      for (let m = 0; m < N; m++) total += weights[m] * vT[vBase + m];
      row[offset + c] = total / sum;
    }
  }
}
