// Deterministic random BF16 weights, fast enough for full-size checkpoints (3.3 G values).
//
// Each tensor has its own xoshiro128** stream seeded from (seed, tensor name), so a tensor's values
// do not depend on sharding, order or chunk sizes. Every 32-bit draw yields two normal samples: each
// 16-bit half indexes a 65,536-entry table holding the BF16 value of mean + std · Φ⁻¹((i + ½) / 65536),
// i.e. a normal distribution quantised to 65,536 equiprobable levels (|z| ≤ 4.17), converted
// F32 → BF16 with round-to-nearest-even.

/** A normal distribution N(mean, std²). */
export interface NormalInit {
  mean: number;
  std: number;
}

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

/** BF16 bits of the F32 nearest to `x`, rounded to nearest even; NaN stays a (quiet) NaN. */
export function f32ToBf16(x: number): number {
  f32[0] = x;
  const bits = f32Bits[0];
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x0040;
  return (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

/** IEEE half bits of the F32 nearest to `x`, rounded to nearest even (overflow to infinity, NaN kept). */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const bits = f32Bits[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 | (mantissa >>> 13) : 0);
  const e = exponent - 112; // F16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal
    const full = mantissa | 0x800000;
    const shift = 14 - e;
    const rest = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    const m = full >>> shift;
    return sign | (m + (rest > half || (rest === half && m & 1) ? 1 : 0));
  }
  const m = mantissa >>> 13;
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa steps the exponent, up to infinity: still the right rounding.
  return (sign | (e << 10) | m) + (rest > 0x1000 || (rest === 0x1000 && m & 1) ? 1 : 0);
}

/** The F32 value of BF16 bits. */
export function bf16ToF32(bits: number): number {
  f32Bits[0] = bits << 16;
  return f32[0];
}

const LEVELS = 65536;
let standardQuantiles: Float64Array | undefined;
const tables = new Map<string, Uint16Array>();

/** BF16 bits of mean + std · z for the 65,536 equiprobable standard-normal quantiles z. */
function normalBf16Table({ mean, std }: NormalInit): Uint16Array {
  const key = `${mean}/${std}`;
  let table = tables.get(key);
  if (!table) {
    standardQuantiles ??= Float64Array.from({ length: LEVELS }, (_, i) => inverseNormalCdf((i + 0.5) / LEVELS));
    table = new Uint16Array(LEVELS);
    for (let i = 0; i < LEVELS; i++) table[i] = f32ToBf16(mean + std * standardQuantiles[i]);
    tables.set(key, table);
  }
  return table;
}

/** Φ⁻¹(p) for 0 < p < 1 (Acklam's rational approximation, relative error < 1.2e-9). */
function inverseNormalCdf(p: number): number {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const tail = (q: number) =>
    (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  const pLow = 0.02425;
  if (p < pLow) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - pLow) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/** The BF16 values of one tensor, produced in chunks: any chunking yields the same sequence. */
export class NormalBf16Stream {
  private readonly table: Uint16Array;
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spare = -1; // high half of a draw whose low half ended the previous chunk

  constructor(seed: number, tensorName: string, init: NormalInit) {
    this.table = normalBf16Table(init);
    let state = fnv1a32(tensorName) ^ mix32(seed >>> 0);
    const next = () => mix32((state = (state + 0x9e3779b9) | 0)); // splitmix32
    [this.s0, this.s1, this.s2, this.s3] = [next(), next(), next(), next()];
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Fills `out` with the next out.length values (BF16 bits). */
  fill(out: Uint16Array): void {
    const table = this.table;
    const n = out.length;
    let i = 0;
    if (this.spare >= 0 && n > 0) {
      out[i++] = table[this.spare];
      this.spare = -1;
    }
    let s0 = this.s0, s1 = this.s1, s2 = this.s2, s3 = this.s3;
    for (; i < n; i += 2) {
      // xoshiro128**: r = rotl(s1 · 5, 7) · 9, then the xorshift state update.
      const m = Math.imul(s1, 5);
      const r = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      out[i] = table[r & 0xffff];
      if (i + 1 < n) out[i + 1] = table[r >>> 16];
      else this.spare = r >>> 16;
    }
    this.s0 = s0; this.s1 = s1; this.s2 = s2; this.s3 = s3;
  }
}

function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** MurmurHash3's 32-bit finaliser. */
function mix32(z: number): number {
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}
