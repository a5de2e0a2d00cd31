// Numeric building blocks the vision reference adds to reference-math.ts: biased linear layers, LayerNorm, the
// exact (erf) GELU and CLIP's quick_gelu. Plain loops, float64 values, weights kept as exact float32.

import type { Matrix } from './reference-math.js';

/** nn.Linear (or a conv flattened to [out, in·kH·kW]): weight [rows = out, cols = in], optional bias [out]. */
export interface Linear extends Matrix {
  bias: Float32Array | null;
}

/** Reads a checkpoint tensor, failing unless its shape is exactly `shape`: → data[product(shape)]. */
export type TensorLoader = (name: string, shape: number[]) => Float32Array;

/** y = W·x + b: x[cols] → y[rows]. */
export function affine(layer: Linear, x: ArrayLike<number>): Float64Array {
  const { rows, cols, data, bias } = layer;
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let sum = bias === null ? 0 : bias[r];
    for (let c = 0; c < cols; c++) sum += data[base + c] * x[c];
    y[r] = sum;
  }
  return y;
}

/** LayerNorm over the whole row with biased variance: (x − mean)/√(var + eps) ⊙ w + b: x[n] → [n]. */
export function layerNorm(x: Float64Array, weight: Float32Array, bias: Float32Array, eps: number): Float64Array {
  const n = x.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += x[i];
  mean /= n;
  let variance = 0;
  for (let i = 0; i < n; i++) variance += (x[i] - mean) * (x[i] - mean);
  const scale = 1 / Math.sqrt(variance / n + eps);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) y[i] = (x[i] - mean) * scale * weight[i] + bias[i];
  return y;
}

/**
 * erf(x), absolute error ~1e-15: erf(x) = 2/√π · e^(−x²) · Σ_k 2^k x^(2k+1) / (1·3·…·(2k+1)), a series of
 * positive terms (no cancellation); |x| ≥ 6 returns ±1 (erfc(6) ≈ 2e-17).
 */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax >= 6) return Math.sign(x);
  const twoX2 = 2 * ax * ax;
  let term = ax;
  let sum = ax;
  for (let k = 1; term > sum * 1e-17; k++) {
    term *= twoX2 / (2 * k + 1);
    sum += term;
  }
  const value = (2 / Math.sqrt(Math.PI)) * Math.exp(-ax * ax) * sum;
  return x < 0 ? -value : value;
}

/** Exact GELU (nn.GELU default): x/2 · (1 + erf(x/√2)). */
export function gelu(x: number): number {
  return 0.5 * x * (1 + erf(x * Math.SQRT1_2));
}

/** CLIP quick_gelu: x · σ(1.702·x). */
export function quickGelu(x: number): number {
  return x / (1 + Math.exp(-1.702 * x));
}

/** Two-layer MLP down(act(up·x + b1)) + b2: x[in] → [in]. */
export function mlp(up: Linear, down: Linear, activation: (z: number) => number, x: Float64Array): Float64Array {
  const hidden = affine(up, x);
  for (let i = 0; i < hidden.length; i++) hidden[i] = activation(hidden[i]);
  return affine(down, hidden);
}

/** Elementwise a += b in place: a[n], b[n]. */
export function addInPlace(a: Float64Array, b: ArrayLike<number>): void {
  for (let i = 0; i < a.length; i++) a[i] += b[i];
}

/** Row-major rows → one flat array: rows[n][c] → [n·c]. */
export function flatten(rows: Float64Array[]): Float64Array {
  const width = rows.length === 0 ? 0 : rows[0].length;
  const out = new Float64Array(rows.length * width);
  rows.forEach((row, n) => out.set(row, n * width));
  return out;
}
