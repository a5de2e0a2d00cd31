// The layers the GPU vision encoders are built from, mirroring cpu/cpu_vision_ops.h on the device: linear
// layers, LayerNorm, convolutions (patches + matrix product), with BF16 weights in a WeightArena and
// the F32 vectors (biases, norms, position tables) gathered into one parameter buffer. GpuVisionContext
// holds what every component of one encoder shares: the device, transfers, shader ops and one batch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors.h"
#include "vulkan/buffers.h"
#include "vulkan/gpu_vision_ops.h"
#include "vulkan/pipelines.h"
#include "vulkan/shader_ops.h"
#include "vulkan/weights.h"

namespace scriptorium::vk {

// F32 vectors collected on the host while the encoder loads, then uploaded once into one buffer.
class GpuParams {
 public:
  /* element offset of v in the buffer */
  uint64_t add(const std::vector<float>& v);
  void upload(Device& device, Transfer& transfer);
  Operand at(uint64_t offset) const { return Operand{buffer_.get(), offset}; }

 private:
  std::vector<float> host_;
  std::unique_ptr<Buffer> buffer_;
};

struct GpuVisionContext {
  GpuVisionContext(Device& device, const std::string& matmul_path, Precision precision);

  /* a buffer of at least `floats` f32 in slot, grown (never shrunk) as needed; growing first runs
     what the batch holds, which may read the old buffer */
  Buffer& scratch(std::unique_ptr<Buffer>& slot, uint64_t floats);

  Device& device;
  Transfer transfer;
  WeightArena weights;
  ShaderOps ops;
  VisionShaderOps vision_ops;
  CommandBatch batch;
  GpuParams params;
};

// nn.Linear: y = x W^T + b.
struct GpuLinear {
  Operand weight;    // bf16 [out, in]
  uint64_t bias = 0;  // params offset of f32 [out]
  uint32_t out = 0, in = 0;
};

/* prefix.weight [out, in], prefix.bias [out] */
GpuLinear load_gpu_linear(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t out,
                          int64_t in);

/* Y[M, out] (row stride ldy) = act(X[M, in] (row stride ldx) @ W^T + b) */
void linear(GpuVisionContext& ctx, const GpuLinear& layer, Operand X, uint32_t ldx, Operand Y, uint32_t ldy, uint32_t M,
            Activation act = Activation::None);

// LayerNorm (and LayerNorm2d on channels-last pixels) with its weight and bias side by side.
struct GpuLayerNorm {
  uint64_t weight_bias = 0;  // params offset of f32 [2, n]
  uint32_t n = 0;
  float eps = 1e-6f;
};

/* prefix.weight [n], prefix.bias [n] */
GpuLayerNorm load_gpu_layer_norm(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t n,
                                 float eps);

/* Y[M, n] = LayerNorm(X[M, n]); Y may be X */
void layer_norm(GpuVisionContext& ctx, const GpuLayerNorm& norm, Operand X, Operand Y, uint32_t M);

// nn.Conv2d with square kernels, read as the [out, in * k * k] matrix its weight is.
struct GpuConv2d {
  Operand weight;  // bf16 [out, in, k, k]
  bool has_bias = false;
  uint64_t bias = 0;  // params offset of f32 [out]
  uint32_t out = 0, in = 0, kernel = 1, stride = 1, pad = 0;

  uint32_t output_size(uint32_t input) const { return (input + 2 * pad - kernel) / stride + 1; }
};

/* prefix.weight [out, in, k, k] (+ prefix.bias [out]) */
GpuConv2d load_gpu_conv2d(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t out,
                          int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool with_bias);

/* Y[B, Ho, Wo, out] = conv(X[B, in, H, W]); channels_last picks NHWC over NCHW for X. A 1x1 conv on
   channels-last input is one matrix product; others go through patches in `patches` */
void conv2d(GpuVisionContext& ctx, const GpuConv2d& conv, Operand X, bool channels_last, uint32_t B, uint32_t H, uint32_t W,
            Operand Y, std::unique_ptr<Buffer>& patches);

}  // namespace scriptorium::vk
