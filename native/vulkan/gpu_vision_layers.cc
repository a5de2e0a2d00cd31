#include "vulkan/gpu_vision_layers.h"

#include <algorithm>
#include <stdexcept>

namespace scriptorium::vk {

uint64_t GpuParams::add(const std::vector<float>& v) {
  if (buffer_) throw std::logic_error("GpuParams::add after upload");
  const uint64_t offset = host_.size();
  host_.insert(host_.end(), v.begin(), v.end());
  return offset;
}

void GpuParams::upload(Device& device, Transfer& transfer) {
  buffer_ = std::make_unique<Buffer>(device, std::max<size_t>(host_.size(), 1) * sizeof(float));
  transfer.upload(*buffer_, 0, host_.data(), host_.size() * sizeof(float));
  host_ = {};
}

GpuVisionContext::GpuVisionContext(Device& device_, const std::string& matmul_path, Precision precision)
    : device(device_),
      transfer(device_),
      weights(device_, transfer),
      ops(device_, matmul_path, precision),
      vision_ops(device_),
      batch(device_) {}

Buffer& GpuVisionContext::scratch(std::unique_ptr<Buffer>& slot, uint64_t floats) {
  if (!slot || slot->bytes() < floats * sizeof(float)) {
    batch.run();  // recorded dispatches may still read the buffer being replaced
    slot.reset();
    slot = std::make_unique<Buffer>(device, floats * sizeof(float));
  }
  return *slot;
}

GpuLinear load_gpu_linear(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t out,
                          int64_t in) {
  GpuLinear layer;
  layer.weight = ctx.weights.upload_bf16(checkpoint.get(prefix + ".weight", {out, in}));
  layer.bias = ctx.params.add(checkpoint.f32(prefix + ".bias", {out}));
  layer.out = static_cast<uint32_t>(out);
  layer.in = static_cast<uint32_t>(in);
  return layer;
}

void linear(GpuVisionContext& ctx, const GpuLinear& layer, Operand X, uint32_t ldx, Operand Y, uint32_t ldy, uint32_t M,
            Activation act) {
  if (ldy != layer.out) throw std::invalid_argument("linear: the bias needs contiguous output rows");
  ctx.ops.matmul_bf16(ctx.batch, X, ldx, layer.weight, Y, ldy, M, layer.out, layer.in);
  ctx.vision_ops.bias_act(ctx.batch, Y, M * layer.out, ctx.params.at(layer.bias), layer.out, act);
}

GpuLayerNorm load_gpu_layer_norm(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t n,
                                 float eps) {
  std::vector<float> weight_bias = checkpoint.f32(prefix + ".weight", {n});
  const std::vector<float> bias = checkpoint.f32(prefix + ".bias", {n});
  weight_bias.insert(weight_bias.end(), bias.begin(), bias.end());
  return GpuLayerNorm{ctx.params.add(weight_bias), static_cast<uint32_t>(n), eps};
}

void layer_norm(GpuVisionContext& ctx, const GpuLayerNorm& norm, Operand X, Operand Y, uint32_t M) {
  ctx.vision_ops.layer_norm(ctx.batch, X, norm.n, ctx.params.at(norm.weight_bias), Y, norm.n, M, norm.n, norm.eps);
}

GpuConv2d load_gpu_conv2d(GpuVisionContext& ctx, const Checkpoint& checkpoint, const std::string& prefix, int64_t out,
                          int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool with_bias) {
  GpuConv2d conv;
  conv.weight = ctx.weights.upload_bf16(checkpoint.get(prefix + ".weight", {out, in, kernel, kernel}));
  conv.has_bias = with_bias;
  if (with_bias) conv.bias = ctx.params.add(checkpoint.f32(prefix + ".bias", {out}));
  conv.out = static_cast<uint32_t>(out);
  conv.in = static_cast<uint32_t>(in);
  conv.kernel = static_cast<uint32_t>(kernel);
  conv.stride = static_cast<uint32_t>(stride);
  conv.pad = static_cast<uint32_t>(pad);
  return conv;
}

void conv2d(GpuVisionContext& ctx, const GpuConv2d& conv, Operand X, bool channels_last, uint32_t B, uint32_t H, uint32_t W,
            Operand Y, std::unique_ptr<Buffer>& patches) {
  if (H + 2 * conv.pad < conv.kernel || W + 2 * conv.pad < conv.kernel)
    throw std::invalid_argument("conv2d: the kernel is larger than the padded input");
  const uint32_t rows = B * conv.output_size(H) * conv.output_size(W), cols = conv.in * conv.kernel * conv.kernel;
  if (conv.kernel == 1 && conv.stride == 1 && conv.pad == 0 && channels_last) {
    ctx.ops.matmul_bf16(ctx.batch, X, cols, conv.weight, Y, conv.out, rows, conv.out, cols);
  } else {
    const uint32_t C = conv.in;
    const uint32_t strides[4] = {C * H * W, channels_last ? 1 : H * W, channels_last ? W * C : W, channels_last ? C : 1};
    Buffer& p = ctx.scratch(patches, static_cast<uint64_t>(rows) * cols);
    ctx.vision_ops.im2col(ctx.batch, X, strides, B, C, H, W, conv.kernel, conv.stride, conv.pad, Operand{&p, 0});
    ctx.ops.matmul_bf16(ctx.batch, Operand{&p, 0}, cols, conv.weight, Y, conv.out, rows, conv.out, cols);
  }
  if (conv.has_bias) ctx.vision_ops.bias_act(ctx.batch, Y, rows * conv.out, ctx.params.at(conv.bias), conv.out, Activation::None);
}

}  // namespace scriptorium::vk
