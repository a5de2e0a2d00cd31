// The numeric building blocks of the reference decoder (docs/model.md §7): plain loops, float64 accumulation,
// weights kept as their exact float32 checkpoint values.

/** Row-major weight matrix of exact checkpoint values: data[rows·cols] (nn.Linear layout [out, in]). */
export interface Matrix {
  rows: number;
  cols: number;
  data: Float32Array;
}

/** The three projections of a SwiGLU MLP: gate, up [width, hidden], down [hidden, width]. */
export interface SwiGluWeights {
  gate: Matrix;
  up: Matrix;
  down: Matrix;
}

/** Experts chosen by the router, best first, with the weight each one's output is scaled by. */
export interface ExpertRoute {
  experts: number[];
  weights: number[];
}

/** y = W·x (= x·Wᵀ for an nn.Linear weight): W[rows, cols], x[cols] → y[rows]. */
export function matVec(w: Matrix, x: Float64Array): Float64Array {
  const { rows, cols, data } = w;
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let sum = 0;
    for (let c = 0; c < cols; c++) sum += data[base + c] * x[c];
    y[r] = sum;
  }
  return y;
}

/** Elementwise a + b: a[n], b[n] → [n]. */
export function add(a: Float64Array, b: Float64Array): Float64Array {
  const y = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) y[i] = a[i] + b[i];
  return y;
}

/** RMSNorm y = x / sqrt(mean(x²) + eps) ⊙ w: x[n], w[n] → y[n]. */
export function rmsNorm(x: Float64Array, weight: Float32Array, eps: number): Float64Array {
  let sumSquares = 0;
  for (let i = 0; i < x.length; i++) sumSquares += x[i] * x[i];
  const scale = 1 / Math.sqrt(sumSquares / x.length + eps);
  const y = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i] * scale * weight[i];
  return y;
}

/**
 * Rotate-half RoPE of every head of x[heads·headDim] at absolute position p → [heads·headDim]:
 * angle_i = p·theta^(−2i/headDim); out[i] = x[i]cos − x[i+d/2]sin, out[i+d/2] = x[i+d/2]cos + x[i]sin.
 */
export function rope(x: Float64Array, headDim: number, position: number, theta: number): Float64Array {
  const half = headDim / 2;
  const y = new Float64Array(x.length);
  for (let i = 0; i < half; i++) {
    const angle = position * Math.pow(theta, (-2 * i) / headDim);
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    for (let base = 0; base < x.length; base += headDim) {
      const a = x[base + i];
      const b = x[base + i + half];
      y[base + i] = a * cos - b * sin;
      y[base + i + half] = b * cos + a * sin;
    }
  }
  return y;
}

/** Softmax with the maximum subtracted first: x[n] → p[n]. */
export function softmax(x: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < x.length; i++) max = Math.max(max, x[i]);
  const p = new Float64Array(x.length);
  let sum = 0;
  for (let i = 0; i < x.length; i++) {
    p[i] = Math.exp(x[i] - max);
    sum += p[i];
  }
  for (let i = 0; i < x.length; i++) p[i] /= sum;
  return p;
}

/** SiLU(z) = z · sigmoid(z). */
export function silu(z: number): number {
  return z / (1 + Math.exp(-z));
}

/** SwiGLU MLP down(silu(gate·x) ⊙ up·x): x[hidden] → [hidden]. */
export function swiGlu(mlp: SwiGluWeights, x: Float64Array): Float64Array {
  const gate = matVec(mlp.gate, x);
  const up = matVec(mlp.up, x);
  for (let i = 0; i < gate.length; i++) gate[i] = silu(gate[i]) * up[i];
  return matVec(mlp.down, gate);
}

/** Index of the largest value of x[n], the first one on ties. */
export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

/** log softmax(x)[i]: x[i] − max − log Σ exp(x − max). */
export function logSoftmaxAt(x: ArrayLike<number>, i: number): number {
  let max = -Infinity;
  for (let j = 0; j < x.length; j++) max = Math.max(max, x[j]);
  let sum = 0;
  for (let j = 0; j < x.length; j++) sum += Math.exp(x[j] - max);
  return x[i] - max - Math.log(sum);
}

/** Indices of the k largest values of x[n], largest first, the lower index first on ties. */
export function topK(x: ArrayLike<number>, k: number): number[] {
  const chosen: number[] = [];
  const taken = new Uint8Array(x.length);
  for (let n = 0; n < Math.min(k, x.length); n++) {
    let best = -1;
    for (let i = 0; i < x.length; i++) if (!taken[i] && (best < 0 || x[i] > x[best])) best = i;
    taken[best] = 1;
    chosen.push(best);
  }
  return chosen;
}

/**
 * Greedy softmax routing (§7.4): router logits[experts] → top-k experts by score with weight score × scale.
 * With normTopkProb (and k > 1) the weights are instead score / (Σ top-k scores + 1e-20), unscaled, as in the
 * DeepSeek-V2 MoEGate.
 */
export function routeToExperts(logits: Float64Array, k: number, scale: number, normTopkProb: boolean): ExpertRoute {
  const scores = softmax(logits);
  const experts = topK(scores, k);
  const chosen = experts.map((e) => scores[e]);
  if (k > 1 && normTopkProb) {
    const total = chosen.reduce((a, b) => a + b, 0) + 1e-20;
    return { experts, weights: chosen.map((s) => s / total) };
  }
  return { experts, weights: chosen.map((s) => s * scale) };
}

/**
 * Softmax attention of one query (§7.3): q[heads·d] against the visible rows of keys/values (each [kvHeads·d],
 * query head h reads kv head ⌊h·kvHeads/heads⌋) → [heads·d], scores scaled by 1/√d.
 */
export function attend(
  q: Float64Array,
  keys: Float64Array[],
  values: Float64Array[],
  visible: number[],
  heads: number,
  kvHeads: number,
  headDim: number,
): Float64Array {
  const out = new Float64Array(heads * headDim);
  const scale = 1 / Math.sqrt(headDim);
  for (let h = 0; h < heads; h++) {
    const qBase = h * headDim;
    const kvBase = Math.floor((h * kvHeads) / heads) * headDim;
    const scores = visible.map((j) => {
      let dot = 0;
      for (let d = 0; d < headDim; d++) dot += q[qBase + d] * keys[j][kvBase + d];
      return dot * scale;
    });
    const probabilities = softmax(scores);
    visible.forEach((j, n) => {
      for (let d = 0; d < headDim; d++) out[qBase + d] += probabilities[n] * values[j][kvBase + d];
    });
  }
  return out;
}
