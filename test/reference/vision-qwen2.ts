// Reference Qwen2 "LM as vision encoder" of DeepSeek-OCR-2 (docs/model.md §3.4, §5.4): the n SAM tokens followed by
// n learned causal-flow queries, through pre-RMSNorm Qwen2 layers (GQA with q/k/v biases, rotate-half RoPE
// θ = 1e6 at positions 0…2n−1, SwiGLU MLP) under a mixed mask, then the final RMSNorm; the query rows are the
// output.

import type { Qwen2EncoderConfig } from './vision-config.js';
import { type Linear, type TensorLoader, affine } from './vision-math.js';
import { type Matrix, type SwiGluWeights, add, attend, matVec, rmsNorm, rope, swiGlu } from './reference-math.js';

interface Qwen2Layer {
  inputNorm: Float32Array; // [dim]
  q: Linear; // [heads·headDim, dim] with bias
  k: Linear; // [kvHeads·headDim, dim] with bias
  v: Linear; // [kvHeads·headDim, dim] with bias
  o: Matrix; // [dim, heads·headDim], no bias
  postNorm: Float32Array; // [dim]
  mlp: SwiGluWeights; // gate, up [mlpDim, dim]; down [dim, mlpDim]
}

export interface Qwen2Weights {
  config: Qwen2EncoderConfig;
  layers: Qwen2Layer[];
  finalNorm: Float32Array; // [dim]
  queries: Map<number, Float32Array>; // token count n → query table [n, dim] (query_768: 144, query_1024: 256)
}

/** Qwen2 encoder tensors (`model.qwen2_model.*`); queryRows gives the row count of query_768 and query_1024. */
export function loadQwen2(
  tensor: TensorLoader,
  config: Qwen2EncoderConfig,
  queryRows: { query768: number; query1024: number },
): Qwen2Weights {
  const { dim, heads, kvHeads, mlpDim } = config;
  if (dim % heads !== 0 || heads % kvHeads !== 0) {
    throw new Error(`Qwen2 encoder: dim ${dim}, heads ${heads}, kv heads ${kvHeads} do not divide evenly`);
  }
  const kvWidth = kvHeads * (dim / heads);
  const prefix = 'model.qwen2_model';
  const matrix = (name: string, rows: number, cols: number): Matrix => ({
    rows,
    cols,
    data: tensor(name, [rows, cols]),
  });
  const linear = (name: string, rows: number, cols: number): Linear => ({
    ...matrix(`${name}.weight`, rows, cols),
    bias: tensor(`${name}.bias`, [rows]),
  });
  const layers: Qwen2Layer[] = [];
  for (let i = 0; i < config.layers; i++) {
    const l = `${prefix}.model.model.layers.${i}`;
    layers.push({
      inputNorm: tensor(`${l}.input_layernorm.weight`, [dim]),
      q: linear(`${l}.self_attn.q_proj`, dim, dim),
      k: linear(`${l}.self_attn.k_proj`, kvWidth, dim),
      v: linear(`${l}.self_attn.v_proj`, kvWidth, dim),
      o: matrix(`${l}.self_attn.o_proj.weight`, dim, dim),
      postNorm: tensor(`${l}.post_attention_layernorm.weight`, [dim]),
      mlp: {
        gate: matrix(`${l}.mlp.gate_proj.weight`, mlpDim, dim),
        up: matrix(`${l}.mlp.up_proj.weight`, mlpDim, dim),
        down: matrix(`${l}.mlp.down_proj.weight`, dim, mlpDim),
      },
    });
  }
  return {
    config,
    layers,
    finalNorm: tensor(`${prefix}.model.model.norm.weight`, [dim]),
    queries: new Map([
      [queryRows.query768, tensor(`${prefix}.query_768.weight`, [queryRows.query768, dim])],
      [queryRows.query1024, tensor(`${prefix}.query_1024.weight`, [queryRows.query1024, dim])],
    ]),
  };
}

/**
 * The §5.4 mask over [n visual tokens, n queries]: visual rows see every visual column and no query; query row
 * n + i sees every visual column and queries 0…i.
 */
export function qwen2CanAttend(n: number, row: number, column: number): boolean {
  return column < n || column <= row;
}

/** Encodes SAM tokens: visual[n][dim] (n must have a query table) → query outputs [n][dim]. */
export function qwen2Forward(qwen2: Qwen2Weights, visual: Float64Array[]): Float64Array[] {
  const { dim, heads, kvHeads, ropeTheta, rmsNormEps: eps } = qwen2.config;
  const n = visual.length;
  const queries = qwen2.queries.get(n);
  if (queries === undefined) {
    throw new Error(`Qwen2 encoder: no query table for ${n} tokens (only ${[...qwen2.queries.keys()].join(', ')})`);
  }
  const headDim = dim / heads;
  const queryRows = Array.from({ length: n }, (_, i) => Float64Array.from(queries.subarray(i * dim, (i + 1) * dim)));
  let x = [...visual, ...queryRows];
  const visibleTo = x.map((_, row) => x.map((_, column) => column).filter((column) => qwen2CanAttend(n, row, column)));
  for (const layer of qwen2.layers) {
    const normed = x.map((row) => rmsNorm(row, layer.inputNorm, eps));
    const q = normed.map((row, p) => rope(affine(layer.q, row), headDim, p, ropeTheta));
    const k = normed.map((row, p) => rope(affine(layer.k, row), headDim, p, ropeTheta));
    const v = normed.map((row) => affine(layer.v, row));
    x = x.map((row, i) => {
      const h = add(row, matVec(layer.o, attend(q[i], k, v, visibleTo[i], heads, kvHeads, headDim)));
      return add(h, swiGlu(layer.mlp, rmsNorm(h, layer.postNorm, eps)));
    });
  }
  return x.slice(n).map((row) => rmsNorm(row, qwen2.finalNorm, eps));
}
