#include "common/interpolate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace scriptorium {

namespace {

/* Rows of `width` floats per parallel_for grain: about 16K floats of work per chunk */
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)); }

// Keys' cubic convolution kernel with a = -0.5, the one PyTorch's antialiased bicubic uses.
double cubic_aa(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

// Taps of one output position: inputs [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<double> weights;
};

// Source taps of the antialiased bicubic resize of one axis, following PyTorch
// (pytorch/pytorch aten/src/ATen/native/cpu/UpSampleKernel.cpp @ bb7240c3,
// HelperInterpBase::_compute_indices_min_size_weights_aa and HelperInterpCubic::aa_filter):
//   scale = in / out (align_corners=False, no scale_factor); support = 2 * scale when
//   downsampling (scale >= 1), else 2; filter argument scaled by 1/scale when downsampling;
//   centre = scale * (i + 0.5); taps [trunc(centre - support + 0.5), trunc(centre + support + 0.5))
//   clipped to the input; weights normalised to sum 1. The kernel constant is a = -0.5 ("-0.5 for
//   bicubic, antialiasing=true (compatibility with PIL) and -0.75 for antialiasing=false").
std::vector<Taps> bicubic_aa_taps(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double inv_scale = scale >= 1.0 ? 1.0 / scale : 1.0;
  std::vector<Taps> taps(out);
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    Taps& t = taps[i];
    t.first = lo;
    double total = 0.0;
    for (int64_t j = lo; j < hi; ++j) {
      t.weights.push_back(cubic_aa((static_cast<double>(j) - center + 0.5) * inv_scale));
      total += t.weights.back();
    }
    if (total != 0.0)
      for (double& w : t.weights) w /= total;
  }
  return taps;
}

/* Y[outer, out, C] = resample of X[outer, in, C] along the middle axis with `taps` */
void resample_axis(ThreadPool& pool, const std::vector<Taps>& taps, const float* X, int64_t outer, int64_t in,
                   int64_t C, float* Y) {
  const int64_t out = static_cast<int64_t>(taps.size());
  pool.parallel_for(outer * out, row_grain(C * 4), [&](int64_t r0, int64_t r1) {
    std::vector<double> acc(C);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / out, i = r % out;
      std::fill(acc.begin(), acc.end(), 0.0);
      const Taps& t = taps[i];
      for (size_t j = 0; j < t.weights.size(); ++j) {
        const float* x = X + (o * in + t.first + static_cast<int64_t>(j)) * C;
        const double w = t.weights[j];
        for (int64_t c = 0; c < C; ++c) acc[c] += w * x[c];
      }
      float* y = Y + r * C;
      for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>(acc[c]);
    }
  });
}

}  // namespace

/* Y[oh,ow,C] = resize(X[ih,iw,C]) */
void resize_bicubic_aa(ThreadPool& pool, const float* X, int64_t ih, int64_t iw, int64_t C, float* Y, int64_t oh,
                       int64_t ow) {
  if (ih <= 0 || iw <= 0 || oh <= 0 || ow <= 0 || C <= 0)
    throw std::invalid_argument("resize_bicubic_aa: sizes must be positive");
  if (ih == oh && iw == ow) {  // PyTorch copies when the sizes match
    std::copy(X, X + ih * iw * C, Y);
    return;
  }
  std::vector<float> wide;  // [ih, ow, C]
  const float* rows = X;
  if (iw != ow) {
    wide.resize(ih * ow * C);
    resample_axis(pool, bicubic_aa_taps(iw, ow), X, ih, iw, C, wide.data());
    rows = wide.data();
  }
  if (ih != oh)
    resample_axis(pool, bicubic_aa_taps(ih, oh), rows, 1, ih, ow * C, Y);
  else
    std::copy(rows, rows + ih * ow * C, Y);
}

/* Y[ol,C] = resize(X[il,C]) along the first axis */
void resize_linear(const float* X, int64_t il, int64_t C, float* Y, int64_t ol) {
  if (il <= 0 || ol <= 0 || C <= 0) throw std::invalid_argument("resize_linear: sizes must be positive");
  // PyTorch upsample_linear1d: source = max(scale * (i + 0.5) - 0.5, 0) with scale = il / ol;
  // neighbours floor(source) and the next one (clamped to the last row); equal sizes copy.
  const double scale = static_cast<double>(il) / static_cast<double>(ol);
  for (int64_t i = 0; i < ol; ++i) {
    float* y = Y + i * C;
    if (il == ol) {
      std::copy(X + i * C, X + (i + 1) * C, y);
      continue;
    }
    const double src = std::max(scale * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
    const int64_t i0 = static_cast<int64_t>(src);
    const int64_t i1 = i0 + (i0 < il - 1 ? 1 : 0);
    const double l1 = src - static_cast<double>(i0), l0 = 1.0 - l1;
    for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>(l0 * X[i0 * C + c] + l1 * X[i1 * C + c]);
  }
}

}  // namespace scriptorium
