#include "vulkan/gpu_vision_clip.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/interpolate.h"

namespace scriptorium::vk {

GpuClip::GpuClip(GpuVisionContext& ctx, const Checkpoint& checkpoint, const ClipDims& dims) : ctx_(ctx), dims_(dims) {
  dims_.validate();
  const std::string p = "model.vision_model.";
  const int64_t W = dims_.width;
  if (W / dims_.heads > VisionShaderOps::kMaxHeadDim) throw VulkanError("the GPU backend supports CLIP head_dim up to 128");
  class_embedding_ = ctx.params.add(checkpoint.f32(p + "embeddings.class_embedding", {W}));
  positions_ = checkpoint.f32(p + "embeddings.position_embedding.weight", {dims_.pos_grid * dims_.pos_grid + 1, W});
  positions_offset_ = ctx.params.add(positions_);
  pre_norm_ = load_gpu_layer_norm(ctx, checkpoint, p + "pre_layrnorm", W, dims_.eps);
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string l = p + "transformer.layers." + std::to_string(i) + ".";
    layers_.push_back(Layer{load_gpu_layer_norm(ctx, checkpoint, l + "layer_norm1", W, dims_.eps),
                            load_gpu_layer_norm(ctx, checkpoint, l + "layer_norm2", W, dims_.eps),
                            load_gpu_linear(ctx, checkpoint, l + "self_attn.qkv_proj", 3 * W, W),
                            load_gpu_linear(ctx, checkpoint, l + "self_attn.out_proj", W, W),
                            load_gpu_linear(ctx, checkpoint, l + "mlp.fc1", dims_.mlp, W),
                            load_gpu_linear(ctx, checkpoint, l + "mlp.fc2", W, dims_.mlp)});
  }
}

uint64_t GpuClip::view_floats(uint32_t tokens) const {
  return static_cast<uint64_t>(tokens + 1) * std::max<uint64_t>(3 * dims_.width, dims_.mlp);
}

Operand GpuClip::positions(uint32_t grid) {
  const uint32_t P = static_cast<uint32_t>(dims_.pos_grid), W = static_cast<uint32_t>(dims_.width);
  if (grid == P) return ctx_.params.at(positions_offset_);
  std::unique_ptr<Buffer>& table = resized_positions_[grid];
  if (!table) {
    std::vector<float> rows((static_cast<size_t>(grid) * grid + 1) * W);
    std::copy(positions_.begin(), positions_.begin() + W, rows.begin());
    ThreadPool inline_pool(1);
    resize_bicubic_aa(inline_pool, positions_.data() + W, P, P, W, rows.data() + W, grid, grid);
    table = std::make_unique<Buffer>(ctx_.device, rows.size() * sizeof(float));
    ctx_.transfer.upload(*table, 0, rows.data(), rows.size() * sizeof(float));
  }
  return Operand{table.get(), 0};
}

/* out[n, tokens, width] = CLIP(patches[n, tokens, width]) without the CLS row */
void GpuClip::encode(Operand patches, uint32_t n, uint32_t tokens, Operand out, uint32_t ldo) {
  const uint32_t grid = static_cast<uint32_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  if (n == 0 || tokens == 0 || grid * grid != tokens)
    throw std::invalid_argument("CLIP: needs at least one view of a square token grid, got " + std::to_string(tokens) +
                                " tokens");
  const uint32_t W = static_cast<uint32_t>(dims_.width), L = tokens + 1, rows = n * L;
  const uint32_t heads = static_cast<uint32_t>(dims_.heads), D = W / heads, mlp = static_cast<uint32_t>(dims_.mlp);
  const Operand position_rows = positions(grid);
  Operand x{&ctx_.scratch(x_, static_cast<uint64_t>(rows) * W), 0};
  Operand normed{&ctx_.scratch(normed_, static_cast<uint64_t>(rows) * W), 0};
  Buffer& qkv = ctx_.scratch(qkv_, static_cast<uint64_t>(rows) * 3 * W);
  Operand attn{&ctx_.scratch(attn_, static_cast<uint64_t>(rows) * W), 0};
  Operand hidden{&ctx_.scratch(hidden_, static_cast<uint64_t>(rows) * mlp), 0};

  VisionShaderOps& vops = ctx_.vision_ops;
  vops.copy_rows(ctx_.batch, ctx_.params.at(class_embedding_), 0, W, x, L * W, W, n, 1, W);
  vops.copy_rows(ctx_.batch, patches, tokens * W, W, Operand{x.buffer, W}, L * W, W, n, tokens, W);
  vops.bias_act(ctx_.batch, x, rows * W, position_rows, L * W, Activation::None);
  layer_norm(ctx_, pre_norm_, x, x, rows);
  for (const Layer& layer : layers_) {
    layer_norm(ctx_, layer.norm1, x, normed, rows);
    linear(ctx_, layer.qkv, normed, W, Operand{&qkv, 0}, 3 * W, rows);
    vops.attention(ctx_.batch, qkv, 0, W, 2 * W, 3 * W, attn, W, n, L, heads, D, 1.0f / std::sqrt(static_cast<float>(D)),
                   nullptr);
    linear(ctx_, layer.out_proj, attn, W, normed, W, rows);
    ctx_.ops.axpy(ctx_.batch, x, 1.0f, normed, rows * W);
    layer_norm(ctx_, layer.norm2, x, normed, rows);
    linear(ctx_, layer.fc1, normed, W, hidden, mlp, rows, Activation::QuickGelu);
    linear(ctx_, layer.fc2, hidden, mlp, normed, W, rows);
    ctx_.ops.axpy(ctx_.batch, x, 1.0f, normed, rows * W);
  }
  vops.copy_rows(ctx_.batch, Operand{x.buffer, W}, L * W, W, out, tokens * ldo, ldo, n, tokens, W);
}

}  // namespace scriptorium::vk
