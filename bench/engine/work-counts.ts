// The work each measured stage does, counted from the model's dimensions: floating-point operations
// of the encoders and of a prefill (compute-bound), and bytes a decode step reads (memory-bound).
//
// FLOPs (a multiply-add is 2) are split by the kernel that runs them, since the two have different
// ceilings: products with BF16 weights (linear layers, convolutions as im2col GEMMs) run on
// gemm_bf16; activation-by-activation products (attention scores and values, SAM's relative
// position terms, the MoE router) run on gemm_f32. Norms, activations and softmax are not counted.
import type { DecoderDims } from '../../src/engine/model-config.js';
import type { KvCacheDtype, WeightQuantization } from '../../src/engine/native-binding.js';
import type { ClipDims, Qwen2Dims, SamDims, VisionDims } from '../../src/engine/vision-config.js';

export interface Flops {
  bf16: number;
  f32: number;
}

export const NO_FLOPS: Flops = { bf16: 0, f32: 0 };

export function addFlops(...parts: readonly Flops[]): Flops {
  return parts.reduce((sum, p) => ({ bf16: sum.bf16 + p.bf16, f32: sum.f32 + p.f32 }), NO_FLOPS);
}

export function totalFlops(flops: Flops): number {
  return flops.bf16 + flops.f32;
}

/** Output side of a 3×3, stride-2, padding-1 convolution. */
function halved(side: number): number {
  return Math.floor((side - 1) / 2) + 1;
}

/** Side of SAM's output grid for views of `side` pixels: side / patch, then net_2 and net_3 halve it. */
export function samOutputGrid(sam: SamDims, side: number): number {
  return halved(halved(side / sam.patchSize));
}

/**
 * SAM on n square views of `side` pixels. Windowed blocks attend within windowSize² windows of the
 * grid zero-padded to a multiple of the window (as the model does), so their attention runs on the
 * padded rows; their projections run on the real tokens only (a padded row's q, k and v are the
 * qkv bias, and its output is dropped). Global blocks attend over each view's whole grid.
 */
export function samFlops(sam: SamDims, side: number, n: number): Flops {
  const C = sam.width;
  const g = side / sam.patchSize;
  const tokens = n * g * g;
  let bf16 = 2 * tokens * C * 3 * sam.patchSize * sam.patchSize; // patch embedding
  let f32 = 0;
  for (let block = 0; block < sam.layers; block++) {
    const global = sam.globalBlocks.includes(block);
    const S = global ? g : sam.windowSize; // the attended square's side
    const perSide = Math.ceil(g / S);
    const rows = global ? tokens : n * perSide * perSide * S * S;
    bf16 += 2 * tokens * C * 3 * C + 2 * tokens * C * C; // qkv, proj
    f32 += 4 * rows * S * S * C; // scores and values: every row against the S² keys of its square
    f32 += 4 * rows * S * C; // relative-position terms: each query against S rows of rel_h and of rel_w
    bf16 += 2 * 2 * tokens * C * sam.mlpDim; // lin1, lin2
  }
  const g2 = halved(g);
  const g3 = halved(g2);
  bf16 += 2 * tokens * sam.neckChannels * C; // neck.0, 1×1
  bf16 += 2 * tokens * sam.neckChannels * sam.neckChannels * 9; // neck.2, 3×3
  bf16 += 2 * n * g2 * g2 * sam.net2Channels * sam.neckChannels * 9; // net_2
  bf16 += 2 * n * g3 * g3 * sam.net3Channels * sam.net2Channels * 9; // net_3
  return { bf16, f32 };
}

/** CLIP on n views of `tokens` SAM tokens each (plus the CLS row). */
export function clipFlops(clip: ClipDims, tokens: number, n: number): Flops {
  const W = clip.width;
  const L = tokens + 1;
  const rows = n * L;
  const perLayer = {
    bf16: 2 * rows * W * 3 * W + 2 * rows * W * W + 2 * 2 * rows * W * clip.mlpDim,
    f32: 4 * n * L * L * W,
  };
  return { bf16: clip.layers * perLayer.bf16, f32: clip.layers * perLayer.f32 };
}

/**
 * The Qwen2 encoder on n views: `tokens` visual rows followed by as many queries. Causal-flow mask:
 * a visual row sees the `tokens` visual rows, query i the visual rows and queries 0..i.
 */
export function qwen2Flops(q: Qwen2Dims, tokens: number, n: number): Flops {
  const D = q.dim;
  const kvWidth = q.kvHeads * (D / q.heads);
  const rows = n * 2 * tokens;
  const keysSeen = tokens * tokens + tokens * tokens + (tokens * (tokens + 1)) / 2;
  const perLayer = {
    bf16: 2 * rows * D * D * 2 + 2 * 2 * rows * D * kvWidth + 3 * 2 * rows * D * q.mlpDim, // q, o; k, v; gate, up, down
    f32: 4 * n * keysSeen * D,
  };
  return { bf16: q.layers * perLayer.bf16, f32: q.layers * perLayer.f32 };
}

/** The vision-to-decoder projector on n views of `tokens` rows. */
export function projectorFlops(vision: VisionDims, tokens: number, n: number): Flops {
  return { bf16: 2 * n * tokens * vision.projectorInput * vision.embed, f32: 0 };
}

/** One encodeImages call: n views of `side` pixels through each stage. */
export function encodeFlops(vision: VisionDims, side: number, n: number): { sam: Flops; encoder: Flops; projector: Flops } {
  const grid = samOutputGrid(vision.sam, side);
  const tokens = grid * grid;
  let encoder: Flops;
  if (vision.kind === 'deepencoder') encoder = clipFlops(vision.clip!, tokens, n);
  else encoder = qwen2Flops(vision.qwen2!, tokens, n);
  return { sam: samFlops(vision.sam, side, n), encoder, projector: projectorFlops(vision, tokens, n) };
}

function isMoeLayer(d: DecoderDims, layer: number): boolean {
  return d.routedExperts > 0 && layer >= d.firstDenseLayers && layer % d.moeLayerFreq === 0;
}

/** How many of the decoder's layers are MoE layers: the layers the engine's routed-expert count covers. */
export function moeLayerCount(d: DecoderDims): number {
  return Array.from({ length: d.layers }, (_, layer) => isMoeLayer(d, layer)).filter(Boolean).length;
}

/**
 * One sequence's forward call of `tokens` new tokens after `past` cached ones, with full causal
 * attention (a prefill; V3's window only applies to later calls) and logits for the last token.
 */
export function prefillFlops(d: DecoderDims, tokens: number, past = 0): Flops {
  const H = d.hidden;
  const qWidth = d.heads * d.headDim;
  const kvWidth = d.kvHeads * d.headDim;
  const keysSeen = tokens * past + (tokens * (tokens + 1)) / 2;
  let bf16 = 0;
  let f32 = 0;
  for (let layer = 0; layer < d.layers; layer++) {
    bf16 += 2 * tokens * H * (2 * qWidth + 2 * kvWidth); // q, k, v, o
    f32 += 4 * keysSeen * qWidth;
    if (isMoeLayer(d, layer)) {
      f32 += 2 * tokens * H * d.routedExperts; // router
      bf16 += 3 * 2 * tokens * H * d.moeIntermediate * (d.expertsPerToken + d.sharedExperts);
    } else {
      bf16 += 3 * 2 * tokens * H * d.intermediate;
    }
  }
  bf16 += 2 * H * d.vocab; // lm_head
  return { bf16, f32 };
}

const BF16_BYTES = 2;
const F32_BYTES = 4;
/** `--quantize int8`: one byte per weight plus an F32 scale per 64 (native kInt8Group). */
const INT8_BYTES = 1 + F32_BYTES / 64;

/** What a decode step's weight bytes depend on besides the dims and the batch. */
export interface DecodeReadOptions {
  /** int8: experts and lm_head held in 8 bits (default none: BF16). */
  quantize?: WeightQuantization;
  /** Distinct routed experts per MoE layer and step, as measured; default the uniform-routing expectation. */
  distinctExperts?: number;
  /** Bytes of one cached key or value element (default F32; KV_ELEMENT_BYTES.f16 for the half cache). */
  kvElementBytes?: number;
}

/** Expected number of distinct experts `batch` tokens select when each picks `perToken` of `experts` uniformly. */
export function expectedDistinctExperts(experts: number, perToken: number, batch: number): number {
  return experts * (1 - (1 - perToken / experts) ** batch);
}

/**
 * Weight bytes one decode step reads for `batch` sequences of one new token each: per layer the
 * attention projections and both norms, then the dense FFN or the MoE router (held in F32), the
 * shared experts and the routed experts selected (at batch > 1 the distinct ones: measured, or
 * their expected number); then the final norm, lm_head and the new tokens' embedding rows.
 */
export function decodeWeightBytes(d: DecoderDims, batch: number, options: DecodeReadOptions = {}): number {
  const H = d.hidden;
  const qWidth = d.heads * d.headDim;
  const kvWidth = d.kvHeads * d.headDim;
  const quantizedBytes = options.quantize === 'int8' ? INT8_BYTES : BF16_BYTES;
  const expert = 3 * H * d.moeIntermediate * quantizedBytes;
  const distinct = options.distinctExperts ?? expectedDistinctExperts(d.routedExperts, d.expertsPerToken, batch);
  let bytes = 0;
  for (let layer = 0; layer < d.layers; layer++) {
    bytes += (2 * H * qWidth + 2 * H * kvWidth + 2 * H) * BF16_BYTES;
    if (isMoeLayer(d, layer)) {
      bytes += d.routedExperts * H * F32_BYTES;
      bytes += expert * (distinct + d.sharedExperts);
    } else {
      bytes += 3 * H * d.intermediate * BF16_BYTES;
    }
  }
  return bytes + (H + batch * H) * BF16_BYTES + d.vocab * H * quantizedBytes;
}

/**
 * KV-cache slots a query at absolute position `pos` attends to, `prefix` being the tokens of the
 * sequence's first forward call (native KvCache::visible_slots): every earlier token with full
 * attention; with R-SWA the prefix and the latest `slidingWindow` generated tokens.
 */
export function visibleSlots(d: DecoderDims, prefix: number, pos: number): number {
  if (d.slidingWindow === 0 || pos < prefix) return pos + 1;
  return prefix + Math.min(pos - prefix + 1, d.slidingWindow);
}

/** Bytes of one cached key or value element per KV-cache storage. */
export const KV_ELEMENT_BYTES: Record<KvCacheDtype, number> = { f32: F32_BYTES, f16: 2 };

/**
 * Bytes of the keys and values one sequence's decode step at absolute position `pos` reads, each
 * value `elementBytes` wide (F32 by default; 2 for the half cache).
 */
export function kvReadBytes(d: DecoderDims, prefix: number, pos: number, elementBytes = F32_BYTES): number {
  return d.layers * visibleSlots(d, prefix, pos) * 2 * d.kvHeads * d.headDim * elementBytes;
}

/**
 * Bytes read by `steps` decode steps of `batch` sequences that each hold `prefix` prompt tokens and
 * feed their first generated token at position `prefix`, the next at prefix + 1, and so on.
 */
export function decodeRunBytes(d: DecoderDims, batch: number, prefix: number, steps: number, options: DecodeReadOptions = {}): number {
  let bytes = steps * decodeWeightBytes(d, batch, options);
  for (let step = 0; step < steps; step++) bytes += batch * kvReadBytes(d, prefix, prefix + step, options.kvElementBytes);
  return bytes;
}
