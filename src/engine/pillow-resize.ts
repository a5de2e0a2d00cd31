// Pillow's `Image.resize(size, Image.BICUBIC)` for 8-bit RGB, bit for bit (docs/model.md §4.1: every resize in
// the official preprocessing is this one). Pillow's libImaging/Resample.c is a separable convolution: a horizontal
// pass into a uint8 intermediate, then a vertical pass. Per output pixel the filter — Keys' cubic with a = -0.5 and
// support 2, widened by the scale factor when shrinking (antialiasing) — is sampled in double precision,
// normalised to sum 1 and turned into 22-bit fixed-point integers; sums start at one half and are shifted back and
// clipped to 0..255. A pass whose output size equals its input size is skipped (the pixels are copied).

import type { RgbImage } from '../documents/rgb-image.js';

/** Fixed-point fraction bits of the coefficients: 32 bits minus 8 for the pixel value minus 2 for overshoot. */
const PRECISION_BITS = 32 - 8 - 2;
/** Every sum starts at one half, so that the final shift rounds. */
const HALF = 1 << (PRECISION_BITS - 1);
/** Keys' cubic convolution parameter a. */
const CUBIC_A = -0.5;
const CUBIC_SUPPORT = 2;

/** Keys' cubic kernel (Pillow `bicubic_filter`), evaluated in the same order of operations. */
function bicubic(x: number): number {
  if (x < 0) x = -x;
  if (x < 1) return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * CUBIC_A;
  return 0;
}

/**
 * The taps of a 1-D resampling from `inSize` to `outSize` samples (Pillow `precompute_coeffs` followed by
 * `normalize_coeffs_8bpc`). Output sample o reads inputs first[o] … first[o] + count[o] - 1 with weights
 * weights[o * maxTaps + t] (22-bit fixed point).
 */
interface ResampleTaps {
  first: Int32Array; // [outSize]
  count: Int32Array; // [outSize]
  weights: Int32Array; // [outSize, maxTaps]
  maxTaps: number;
}

function resampleTaps(inSize: number, outSize: number): ResampleTaps {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = CUBIC_SUPPORT * filterScale;
  const maxTaps = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * maxTaps);
  const invFilterScale = 1 / filterScale;
  const sampled = new Float64Array(maxTaps);
  for (let o = 0; o < outSize; o++) {
    const center = (o + 0.5) * scale;
    // C casts to int (truncation); negative values are clamped to 0 anyway.
    const lo = Math.max(Math.trunc(center - support + 0.5), 0);
    const hi = Math.min(Math.trunc(center + support + 0.5), inSize);
    const taps = hi - lo;
    let total = 0;
    for (let t = 0; t < taps; t++) {
      sampled[t] = bicubic((t + lo - center + 0.5) * invFilterScale);
      total += sampled[t];
    }
    for (let t = 0; t < taps; t++) {
      const w = total !== 0 ? sampled[t] / total : sampled[t];
      weights[o * maxTaps + t] = Math.trunc(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
    }
    first[o] = lo;
    count[o] = taps;
  }
  return { first, count, weights, maxTaps };
}

/** Fixed-point sum (rounding bias included) -> uint8, as Pillow's `clip8`. */
function clip8(sum: number): number {
  const value = sum >> PRECISION_BITS;
  return value < 0 ? 0 : value > 255 ? 255 : value;
}

/** Horizontal pass over rows rowStart … rowStart + rows - 1 of `image`: out is [rows, outWidth, 3]. */
function resampleRows(image: RgbImage, rowStart: number, rows: number, outWidth: number): RgbImage {
  const taps = resampleTaps(image.width, outWidth);
  const out = new Uint8Array(rows * outWidth * 3);
  const src = image.data;
  for (let y = 0; y < rows; y++) {
    const rowBase = (rowStart + y) * image.width * 3;
    for (let x = 0; x < outWidth; x++) {
      const k = x * taps.maxTaps;
      let p = rowBase + taps.first[x] * 3;
      let r = HALF;
      let g = HALF;
      let b = HALF;
      for (let t = 0; t < taps.count[x]; t++, p += 3) {
        const w = taps.weights[k + t];
        r += src[p] * w;
        g += src[p + 1] * w;
        b += src[p + 2] * w;
      }
      const o = (y * outWidth + x) * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  }
  return { width: outWidth, height: rows, data: out };
}

/** Vertical pass; taps index rows of `image` shifted up by `rowOffset`. Accumulates whole rows for locality. */
function resampleColumns(image: RgbImage, taps: ResampleTaps, rowOffset: number, outHeight: number): RgbImage {
  const rowStride = image.width * 3;
  const out = new Uint8Array(outHeight * rowStride);
  const src = image.data;
  const sums = new Float64Array(rowStride);
  for (let y = 0; y < outHeight; y++) {
    sums.fill(HALF);
    for (let t = 0; t < taps.count[y]; t++) {
      const w = taps.weights[y * taps.maxTaps + t];
      const row = (taps.first[y] - rowOffset + t) * rowStride;
      for (let i = 0; i < rowStride; i++) sums[i] += src[row + i] * w;
    }
    const outRow = y * rowStride;
    for (let i = 0; i < rowStride; i++) out[outRow + i] = clip8(sums[i]);
  }
  return { width: image.width, height: outHeight, data: out };
}

/**
 * `image` resized to width × height as Pillow's `image.resize((width, height), Image.BICUBIC)` (also Pillow's
 * default filter since 7.0) does it. Stretches: the aspect ratio is not preserved.
 */
export function pillowResizeBicubic(image: RgbImage, width: number, height: number): RgbImage {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
    throw new RangeError(`resize target must be positive integers, got ${width}×${height}`);
  }
  if (image.width <= 0 || image.height <= 0) throw new RangeError(`cannot resize an empty ${image.width}×${image.height} image`);
  if (width === image.width && height === image.height) return { width, height, data: image.data.slice() };
  const verticalTaps = resampleTaps(image.height, height);
  // Only the source rows the vertical pass reads go through the horizontal pass.
  const firstRow = verticalTaps.first[0];
  const endRow = verticalTaps.first[height - 1] + verticalTaps.count[height - 1];
  let current = image;
  let rowOffset = 0;
  if (width !== image.width) {
    current = resampleRows(image, firstRow, endRow - firstRow, width);
    rowOffset = firstRow;
  }
  if (height === image.height) return current;
  return resampleColumns(current, verticalTaps, rowOffset, height);
}
