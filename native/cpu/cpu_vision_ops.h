// Building blocks shared by the vision encoders (SAM, CLIP, Qwen2): weight loading, linear and
// convolution layers, LayerNorm, the GELU variants (attention is in attention.h, the position
// tables' interpolations in common/interpolate.h). Activations are F32 and
// row-major; weights stay BF16 in the checkpoint mapping, or are packed once at load where the
// kernel set multiplies packed weights (the mapped pages are then released); biases and norm
// parameters become F32.
// Every function with a ThreadPool spreads its work over it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/safetensors.h"
#include "common/thread_pool.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace scriptorium {

/* v[numel] f32 = BF16 tensor `name` of the given shape */
std::vector<float> load_f32(const Checkpoint& checkpoint, const std::string& name, const std::vector<int64_t>& shape);

// Called by an encoder after each of its layers: where an encode may give the cores to a decode step
// (cpu/compute_turns.h).
using BetweenLayers = std::function<void()>;

// nn.Linear: y = x W^T (+ b).
struct Linear {
  Bf16Weight weight;        // [out, in]
  std::vector<float> bias;         // [out], empty without bias
  int64_t out = 0, in = 0;
};

/* prefix.weight [out,in] (+ prefix.bias [out]) */
Linear load_linear(const Checkpoint& checkpoint, const std::string& prefix, int64_t out, int64_t in, bool with_bias);

// LayerNorm over the last dimension with affine weight and bias. LayerNorm2d (SAM's neck) is the
// same operation on channels-last pixels, which is how the encoders hold feature maps.
struct LayerNorm {
  std::vector<float> weight, bias;  // [C]
  float eps = 1e-6f;
};

enum class Activation {
  None,
  GeluErf,    // x * (1 + erf(x / sqrt 2)) / 2 (exact GELU)
  QuickGelu,  // x * sigmoid(1.702 x)
  SwiGlu,     // silu(x) * up, with the up projection given beside it
};

// What linear does to each row of its output right after the row's product, while it is in cache,
// in this order (each step only when asked): + bias, the activation, residual += y, then
// y = norm(residual), or norm(y) without a residual. Every step is the F32 operation a separate
// pass over the whole output would do, so the result is bitwise that of the separate passes.
struct Epilogue {
  Activation activation = Activation::None;
  const float* up = nullptr;        // [M, out]: Activation::SwiGlu only
  float* residual = nullptr;        // [M, out]
  const LayerNorm* norm = nullptr;  // of width out
};

/* Y[M,out] = epilogue(X[M,in] @ W[out,in]^T + b[out]) */
void linear(ThreadPool& pool, const Linear& layer, const float* X, float* Y, int64_t M, Precision precision,
            const Epilogue& epilogue = {});

/* prefix.weight [n], prefix.bias [n] */
LayerNorm load_layer_norm(const Checkpoint& checkpoint, const std::string& prefix, int64_t n, float eps);

/* Y[M,C] = (X - mean) / sqrt(var + eps) * w + b per row (biased variance, F32); Y may alias X */
void layer_norm(ThreadPool& pool, const LayerNorm& norm, const float* X, float* Y, int64_t M);

// nn.Conv2d with square kernels: weight [out, in, k, k] bf16, read as the [out, in*k*k] matrix it is.
struct Conv2d {
  Bf16Weight weight;
  std::vector<float> bias;  // [out], empty without bias
  int64_t out = 0, in = 0, kernel = 1, stride = 1, pad = 0;

  int64_t output_size(int64_t input_size) const { return (input_size + 2 * pad - kernel) / stride + 1; }
};

/* prefix.weight [out,in,k,k] (+ prefix.bias [out]) */
Conv2d load_conv2d(const Checkpoint& checkpoint, const std::string& prefix, int64_t out, int64_t in, int64_t kernel,
                   int64_t stride, int64_t pad, bool with_bias);

// Where element (b, c, y, x) of an image batch lives: X[b*batch + c*channel + y*row + x*col].
struct ImageStrides {
  int64_t batch, channel, row, col;
  static ImageStrides nchw(int64_t C, int64_t H, int64_t W) { return {C * H * W, H * W, W, 1}; }
  static ImageStrides nhwc(int64_t C, int64_t H, int64_t W) { return {H * W * C, 1, W * C, C}; }
};

/* Y[B,Ho,Wo,out] = conv(X[B,in,H,W] at `strides`): im2col rows [(b,oy,ox), (c,ky,kx)] @ W[out, in*k*k]^T,
   + bias, then norm(Y) per output pixel when `norm` is given (SAM's neck) */
void conv2d(ThreadPool& pool, const Conv2d& conv, const float* X, const ImageStrides& strides, int64_t B, int64_t H,
            int64_t W, float* Y, Precision precision, const LayerNorm* norm = nullptr);

/* y[n] += x[n] */
void add_in_place(ThreadPool& pool, float* y, const float* x, int64_t n);

}  // namespace scriptorium
