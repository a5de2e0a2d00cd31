#include "cpu/cpu_vision_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cpu/ops.h"

namespace scriptorium {

namespace {

constexpr int64_t kIm2colFloats = 1 << 22;  // im2col chunk: 16 MiB of F32

/* Rows of `width` floats per parallel_for grain: about 16K floats of work per chunk */
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)); }

constexpr int64_t kLanes = 16;  // independent F32 partial sums: the compiler vectorises them as they are

/* lanes[0] + ... + lanes[kLanes - 1], pairwise; lanes are overwritten */
float lane_total(float* lanes) {
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  return lanes[0];
}

/* y[C] = (x - mean) / sqrt(var + eps) * w + b; y may alias x */
void layer_norm_row(const LayerNorm& norm, const float* x, float* y, int64_t C) {
  // Two passes in F32: the mean, then the deviations from it. Their sum is the mean's rounding
  // error times C (the corrected two-pass algorithm), so the result's error scales with the
  // row's spread rather than with its mean.
  const int64_t whole = C / kLanes * kLanes;
  float sum[kLanes] = {};
  for (int64_t c = 0; c < whole; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) sum[l] += x[c + l];
  for (int64_t c = whole; c < C; ++c) sum[c - whole] += x[c];
  const float count = static_cast<float>(C);
  const float mean = lane_total(sum) / count;
  float dev[kLanes] = {}, square[kLanes] = {};
  for (int64_t c = 0; c < whole; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      const float d = x[c + l] - mean;
      dev[l] += d;
      square[l] += d * d;
    }
  for (int64_t c = whole; c < C; ++c) {
    const float d = x[c] - mean;
    dev[c - whole] += d;
    square[c - whole] += d * d;
  }
  const float shift = lane_total(dev) / count;
  const float var = std::max(lane_total(square) / count - shift * shift, 0.0f);
  const float r = 1.0f / std::sqrt(var + norm.eps);
  const float* w = norm.weight.data();
  const float* b = norm.bias.data();
  for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - mean - shift) * r * w[c] + b[c];
}

/* x[n] = x * sigmoid(1.702 x) */
void quick_gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

/* rows [m0, m1) of Y[M, N]: + bias[N] (when not null), then the steps of `e`, row by row. The adds
   are axpy with a = 1: an FMA of 1 * x + y rounds once, exactly as y + x does. */
void finish_rows(const Epilogue& e, const float* bias, float* Y, int64_t N, int64_t m0, int64_t m1) {
  const KernelSet& kernels = active_kernels();
  for (int64_t m = m0; m < m1; ++m) {
    float* y = Y + m * N;
    if (bias) kernels.axpy(y, 1.0f, bias, N);
    switch (e.activation) {
      case Activation::None: break;
      case Activation::GeluErf: kernels.gelu_erf(y, N); break;
      case Activation::QuickGelu: quick_gelu(y, N); break;
      case Activation::SwiGlu: kernels.swiglu(y, e.up + m * N, y, N); break;
    }
    float* residual = e.residual ? e.residual + m * N : nullptr;
    if (residual) kernels.axpy(residual, 1.0f, y, N);
    if (e.norm) layer_norm_row(*e.norm, residual ? residual : y, y, N);
  }
}

/* Y[M,N] = X[M,K] @ W[N,K]^T, then + bias ([N] or empty) and the steps of `e` on each row */
void product(ThreadPool& pool, const Bf16Weight& W, const std::vector<float>& bias, const float* X, float* Y,
             int64_t M, int64_t N, int64_t K, Precision precision, const Epilogue& e) {
  if (e.activation == Activation::SwiGlu && !e.up) throw std::invalid_argument("linear: SwiGLU needs the up projection");
  if (e.norm && static_cast<int64_t>(e.norm->weight.size()) != N)
    throw std::invalid_argument("linear: the norm after the product must have the product's width");
  const float* b = bias.empty() ? nullptr : bias.data();
  RowEpilogue finish;
  if (b || e.activation != Activation::None || e.residual || e.norm)
    finish = [&e, b, Y, N](int64_t m0, int64_t m1) { finish_rows(e, b, Y, N, m0, m1); };
  matmul_bf16(pool, X, W, Y, M, N, K, precision, finish);
}

}  // namespace

std::vector<float> load_f32(const Checkpoint& checkpoint, const std::string& name, const std::vector<int64_t>& shape) {
  return checkpoint.f32(name, shape);
}

Linear load_linear(const Checkpoint& checkpoint, const std::string& prefix, int64_t out, int64_t in, bool with_bias) {
  Linear layer;
  layer.weight.rows = reinterpret_cast<const bf16_t*>(checkpoint.get(prefix + ".weight", {out, in}).data);
  pack_weight(checkpoint, layer.weight, out, in);
  if (with_bias) layer.bias = load_f32(checkpoint, prefix + ".bias", {out});
  layer.out = out;
  layer.in = in;
  return layer;
}

/* Y[M,out] = epilogue(X[M,in] @ W[out,in]^T + b[out]) */
void linear(ThreadPool& pool, const Linear& layer, const float* X, float* Y, int64_t M, Precision precision,
            const Epilogue& epilogue) {
  product(pool, layer.weight, layer.bias, X, Y, M, layer.out, layer.in, precision, epilogue);
}

LayerNorm load_layer_norm(const Checkpoint& checkpoint, const std::string& prefix, int64_t n, float eps) {
  return LayerNorm{load_f32(checkpoint, prefix + ".weight", {n}), load_f32(checkpoint, prefix + ".bias", {n}), eps};
}

/* Y[M,C] = (X - mean) / sqrt(var + eps) * w + b per row */
void layer_norm(ThreadPool& pool, const LayerNorm& norm, const float* X, float* Y, int64_t M) {
  const int64_t C = static_cast<int64_t>(norm.weight.size());
  pool.parallel_for(M, row_grain(C), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) layer_norm_row(norm, X + m * C, Y + m * C, C);
  });
}

Conv2d load_conv2d(const Checkpoint& checkpoint, const std::string& prefix, int64_t out, int64_t in, int64_t kernel,
                   int64_t stride, int64_t pad, bool with_bias) {
  Conv2d conv;
  conv.weight.rows = reinterpret_cast<const bf16_t*>(checkpoint.get(prefix + ".weight", {out, in, kernel, kernel}).data);
  pack_weight(checkpoint, conv.weight, out, in * kernel * kernel);
  if (with_bias) conv.bias = load_f32(checkpoint, prefix + ".bias", {out});
  conv.out = out;
  conv.in = in;
  conv.kernel = kernel;
  conv.stride = stride;
  conv.pad = pad;
  return conv;
}

/* Y[B,Ho,Wo,out] = conv(X[B,in,H,W] at `strides`) */
void conv2d(ThreadPool& pool, const Conv2d& conv, const float* X, const ImageStrides& s, int64_t B, int64_t H,
            int64_t W, float* Y, Precision precision, const LayerNorm* norm) {
  const int64_t Ho = conv.output_size(H), Wo = conv.output_size(W), k = conv.kernel;
  if (Ho <= 0 || Wo <= 0) throw std::invalid_argument("conv2d: the kernel is larger than the padded input");
  const int64_t rows = B * Ho * Wo, cols = conv.in * k * k;
  const ImageStrides channels_last = ImageStrides::nhwc(conv.in, H, W);
  Epilogue after;
  after.norm = norm;
  if (k == 1 && conv.stride == 1 && conv.pad == 0 && s.batch == channels_last.batch && s.channel == 1 &&
      s.row == channels_last.row && s.col == channels_last.col) {
    product(pool, conv.weight, conv.bias, X, Y, rows, conv.out, cols, precision, after);  // a 1x1 conv on NHWC is a matmul
  } else {
    const int64_t chunk = std::max<int64_t>(1, kIm2colFloats / cols);
    std::vector<float> patches(std::min(rows, chunk) * cols);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t n = std::min(chunk, rows - r0);
      pool.parallel_for(n, row_grain(cols), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t r = r0 + i, b = r / (Ho * Wo), oy = r / Wo % Ho, ox = r % Wo;
          float* p = patches.data() + i * cols;
          for (int64_t c = 0; c < conv.in; ++c)
            for (int64_t ky = 0; ky < k; ++ky) {
              const int64_t y = oy * conv.stride - conv.pad + ky;
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t x = ox * conv.stride - conv.pad + kx;
                const bool inside = y >= 0 && y < H && x >= 0 && x < W;
                *p++ = inside ? X[b * s.batch + c * s.channel + y * s.row + x * s.col] : 0.0f;
              }
            }
        }
      });
      product(pool, conv.weight, conv.bias, patches.data(), Y + r0 * conv.out, n, conv.out, cols, precision, after);
    }
  }
}

/* y[n] += x[n] */
void add_in_place(ThreadPool& pool, float* y, const float* x, int64_t n) {
  pool.parallel_for(n, 16384, [y, x](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] += x[i];
  });
}

}  // namespace scriptorium
