// The two resamplers of the vision encoders, written from PyTorch's documented F.interpolate semantics
// (align_corners = False), in float64 (PyTorch computes them in fp32; docs/model.md §5.1 step 2, §5.3 step 3):
//
// Bicubic, antialias = True (SAM pos_embed, CLIP position grid). Facts confirmed in the sources:
//  - pytorch/pytorch aten/src/ATen/native/cpu/UpSampleKernel.cpp, HelperInterpCubic::aa_filter: Keys cubic
//    convolution with a = −0.5 when antialias is set ("compatibility with PIL"; a = −0.75 is the non-AA value),
//    using cubic_convolution1/2 of aten/src/ATen/native/UpSample.h; the same kernel as Pillow's bicubic_filter
//    (src/libImaging/Resample.c, a = −0.5, support 2).
//  - UpSampleKernel.cpp, HelperInterpBase::_compute_indices_min_size_weights_aa (the Pillow "bounds approach"):
//    scale = in/out (area_pixel_compute_scale, UpSample.h); support = 2·scale when scale ≥ 1 else 2;
//    center = scale·(i + 0.5); xmin = max(trunc(center − support + 0.5), 0);
//    xmax = min(trunc(center + support + 0.5), in); weight of input j = filter((j − center + 0.5)·invscale)
//    with invscale = 1/scale when scale ≥ 1 else 1; weights divided by their sum. So input samples outside the
//    image are dropped and the rest renormalised (no edge replication), for upscaling as well as downscaling,
//    and an output sample sits at (i + 0.5)·scale − 0.5 in input index coordinates.
//  - separable_upsample_generic_Nd_kernel_impl: the last (width) axis is resampled first, then height; an axis
//    whose size is unchanged is skipped (and equal shapes are copied).
//
// Linear, antialias = False (SAM rel_pos tables resized along their length, §5.1 step 3), UpSample.h:
//  - area_pixel_compute_source_index: src = scale·(i + 0.5) − 0.5, clamped to ≥ 0 for linear modes;
//  - compute_source_index_and_lambda / guard_index_and_lambda: equal sizes copy; otherwise
//    i0 = min(floor(src), in − 1), λ = clamp(src − i0, 0, 1), i1 = i0 + 1 unless i0 is the last input,
//    value = (1 − λ)·x[i0] + λ·x[i1].

/** One output sample along an axis: the weights of inputs first, first + 1, … */
export interface Taps {
  first: number;
  weights: Float64Array;
}

/** Keys cubic convolution kernel, a = −0.5 (support |x| < 2). */
export function cubicKernel(x: number): number {
  const a = -0.5;
  const t = Math.abs(x);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
  return 0;
}

/** Taps of bicubic antialiased resampling of one axis, inSize → outSize (outSize entries). */
export function bicubicAntialiasTaps(inSize: number, outSize: number): Taps[] {
  const scale = inSize / outSize;
  const stretch = Math.max(scale, 1); // the kernel is widened by the downscale factor
  const support = 2 * stretch;
  const taps: Taps[] = [];
  for (let i = 0; i < outSize; i++) {
    const center = scale * (i + 0.5);
    const first = Math.max(Math.trunc(center - support + 0.5), 0);
    const end = Math.min(Math.trunc(center + support + 0.5), inSize);
    const weights = new Float64Array(end - first);
    let total = 0;
    for (let j = first; j < end; j++) {
      weights[j - first] = cubicKernel((j - center + 0.5) / stretch);
      total += weights[j - first];
    }
    for (let k = 0; k < weights.length; k++) weights[k] /= total;
    taps.push({ first, weights });
  }
  return taps;
}

/** Taps of linear (non-antialiased) resampling of one axis, inSize → outSize (outSize entries). */
export function linearTaps(inSize: number, outSize: number): Taps[] {
  const scale = inSize / outSize;
  const taps: Taps[] = [];
  for (let i = 0; i < outSize; i++) {
    if (inSize === outSize) {
      taps.push({ first: i, weights: Float64Array.of(1) });
      continue;
    }
    const source = Math.max(scale * (i + 0.5) - 0.5, 0);
    const i0 = Math.min(Math.floor(source), inSize - 1);
    const lambda = Math.min(Math.max(source - i0, 0), 1);
    taps.push({ first: i0, weights: i0 < inSize - 1 ? Float64Array.of(1 - lambda, lambda) : Float64Array.of(1) });
  }
  return taps;
}

/** Resamples the middle axis: data[outer, inSize, inner] → [outer, taps.length, inner]. */
export function resampleAxis(
  data: ArrayLike<number>,
  outer: number,
  inSize: number,
  inner: number,
  taps: Taps[],
): Float64Array {
  const outSize = taps.length;
  const out = new Float64Array(outer * outSize * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < outSize; i++) {
      const { first, weights } = taps[i];
      const target = (o * outSize + i) * inner;
      for (let k = 0; k < weights.length; k++) {
        const w = weights[k];
        const source = (o * inSize + first + k) * inner;
        for (let c = 0; c < inner; c++) out[target + c] += w * data[source + c];
      }
    }
  }
  return out;
}

/** Bicubic antialiased resize of a channels-last grid: grid[inH, inW, C] → [outH, outW, C] (width pass first). */
export function resizeBicubicAntialias(
  grid: ArrayLike<number>,
  inH: number,
  inW: number,
  channels: number,
  outH: number,
  outW: number,
): Float64Array {
  const wide = resampleAxis(grid, inH, inW, channels, bicubicAntialiasTaps(inW, outW));
  return resampleAxis(wide, 1, inH, outW * channels, bicubicAntialiasTaps(inH, outH));
}

/** Linear resize of a table along its rows: table[inLength, C] → [outLength, C]. */
export function resizeLinear(
  table: ArrayLike<number>,
  inLength: number,
  channels: number,
  outLength: number,
): Float64Array {
  return resampleAxis(table, 1, inLength, channels, linearTaps(inLength, outLength));
}
