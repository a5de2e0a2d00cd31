#include "vulkan/gpu_vision_sam.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/interpolate.h"

namespace scriptorium::vk {

GpuSam::GpuSam(GpuVisionContext& ctx, const Checkpoint& checkpoint, const SamDims& dims) : ctx_(ctx), dims_(dims) {
  dims_.validate();
  const std::string p = "model.sam_model.";
  const int64_t C = dims_.width, D = C / dims_.heads, P = dims_.pos_grid;
  if (D > VisionShaderOps::kMaxHeadDim) throw VulkanError("the GPU backend supports SAM head_dim up to 128");
  patch_embed_ = load_gpu_conv2d(ctx, checkpoint, p + "patch_embed.proj", C, 3, dims_.patch, dims_.patch, 0, true);
  pos_embed_ = checkpoint.f32(p + "pos_embed", {1, P, P, C});
  pos_ = ctx.params.add(pos_embed_);
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string q = p + "blocks." + std::to_string(i) + ".";
    Block b;
    b.global = std::count(dims_.global_blocks.begin(), dims_.global_blocks.end(), i) > 0;
    b.norm1 = load_gpu_layer_norm(ctx, checkpoint, q + "norm1", C, dims_.eps);
    b.qkv = load_gpu_linear(ctx, checkpoint, q + "attn.qkv", 3 * C, C);
    b.proj = load_gpu_linear(ctx, checkpoint, q + "attn.proj", C, C);
    b.rel_rows = static_cast<uint32_t>(2 * (b.global ? P : dims_.window) - 1);
    b.rel_h = checkpoint.f32(q + "attn.rel_pos_h", {b.rel_rows, D});
    b.rel_w = checkpoint.f32(q + "attn.rel_pos_w", {b.rel_rows, D});
    b.rel = ctx.params.add(b.rel_h);
    ctx.params.add(b.rel_w);
    b.norm2 = load_gpu_layer_norm(ctx, checkpoint, q + "norm2", C, dims_.eps);
    b.lin1 = load_gpu_linear(ctx, checkpoint, q + "mlp.lin1", dims_.mlp, C);
    b.lin2 = load_gpu_linear(ctx, checkpoint, q + "mlp.lin2", C, dims_.mlp);
    blocks_.push_back(std::move(b));
  }
  neck0_ = load_gpu_conv2d(ctx, checkpoint, p + "neck.0", dims_.neck, C, 1, 1, 0, false);
  neck1_ = load_gpu_layer_norm(ctx, checkpoint, p + "neck.1", dims_.neck, dims_.eps);
  neck2_ = load_gpu_conv2d(ctx, checkpoint, p + "neck.2", dims_.neck, dims_.neck, 3, 1, 1, false);
  neck3_ = load_gpu_layer_norm(ctx, checkpoint, p + "neck.3", dims_.neck, dims_.eps);
  net2_ = load_gpu_conv2d(ctx, checkpoint, p + "net_2", dims_.net2, dims_.neck, 3, 2, 1, false);
  net3_ = load_gpu_conv2d(ctx, checkpoint, p + "net_3", dims_.net3, dims_.net2, 3, 2, 1, false);
}

uint64_t GpuSam::view_floats(uint32_t side) const {
  const uint64_t patch = dims_.patch, g = side / patch, S = dims_.window, per = (g + S - 1) / S;
  const uint64_t C = dims_.width, N = dims_.neck, mlp = dims_.mlp, H = dims_.heads;
  const uint64_t global = g * g * std::max({3 * C, mlp, 3 * patch * patch, 9 * N, H * 2 * g});
  return std::max(global, per * per * S * S * std::max(3 * C, H * 2 * S));
}

Operand GpuSam::positions(uint32_t g) {
  const uint32_t P = static_cast<uint32_t>(dims_.pos_grid), C = static_cast<uint32_t>(dims_.width);
  if (g == P) return ctx_.params.at(pos_);
  std::unique_ptr<Buffer>& table = resized_positions_[g];
  if (!table) {
    std::vector<float> resized(static_cast<size_t>(g) * g * C);
    ThreadPool inline_pool(1);
    resize_bicubic_aa(inline_pool, pos_embed_.data(), P, P, C, resized.data(), g, g);
    table = std::make_unique<Buffer>(ctx_.device, resized.size() * sizeof(float));
    ctx_.transfer.upload(*table, 0, resized.data(), resized.size() * sizeof(float));
  }
  return Operand{table.get(), 0};
}

/* features[n, h, w, net3] = SAM(pixels[n, 3, side, side]) */
void GpuSam::encode(Operand pixels, uint32_t n, uint32_t side, Operand features) {
  if (n == 0) throw std::invalid_argument("SAM: the batch must hold at least one view");
  if (side == 0 || side % dims_.patch != 0)
    throw std::invalid_argument("SAM: the view side " + std::to_string(side) + " is not a positive multiple of the " +
                                std::to_string(dims_.patch) + "-pixel patch");
  const uint32_t g = side / static_cast<uint32_t>(dims_.patch), C = static_cast<uint32_t>(dims_.width), T = n * g * g;
  const Operand position_table = positions(g);
  Operand x{&ctx_.scratch(x_, static_cast<uint64_t>(T) * C), 0};
  conv2d(ctx_, patch_embed_, pixels, false, n, side, side, x, patches_);
  ctx_.vision_ops.bias_act(ctx_.batch, x, T * C, position_table, g * g * C, Activation::None);

  for (Block& block : blocks_) run_block(block, x, n, g);

  const uint32_t N = static_cast<uint32_t>(dims_.neck);
  Operand a{&ctx_.scratch(a_, static_cast<uint64_t>(T) * N), 0}, b{&ctx_.scratch(b_, static_cast<uint64_t>(T) * N), 0};
  conv2d(ctx_, neck0_, x, true, n, g, g, a, patches_);
  layer_norm(ctx_, neck1_, a, a, T);
  conv2d(ctx_, neck2_, a, true, n, g, g, b, patches_);
  layer_norm(ctx_, neck3_, b, b, T);
  const uint32_t g2 = net2_.output_size(g);
  Operand c{&ctx_.scratch(c_, static_cast<uint64_t>(n) * g2 * g2 * net2_.out), 0};
  conv2d(ctx_, net2_, b, true, n, g, g, c, patches_);
  conv2d(ctx_, net3_, c, true, n, g2, g2, features, patches_);
}

/* x[n, g, g, width] = x + Attn(LN1(x)); x = x + MLP(LN2(x)) */
void GpuSam::run_block(Block& block, Operand x, uint32_t n, uint32_t g) {
  const uint32_t C = static_cast<uint32_t>(dims_.width), T = n * g * g;
  Operand normed{&ctx_.scratch(normed_, static_cast<uint64_t>(T) * C), 0};
  layer_norm(ctx_, block.norm1, x, normed, T);
  if (block.global) {
    Operand attn{&ctx_.scratch(out_, static_cast<uint64_t>(T) * C), 0};
    attend(block, normed, n, g, attn);
    ctx_.ops.axpy(ctx_.batch, x, 1.0f, attn, T * C);
  } else {
    // Zero-padded windows of S x S tokens, attention within each, then added back onto the grid.
    const uint32_t S = static_cast<uint32_t>(dims_.window), per = (g + S - 1) / S, seqs = n * per * per;
    const uint64_t window_floats = static_cast<uint64_t>(seqs) * S * S * C;
    Operand windows{&ctx_.scratch(windows_, window_floats), 0};
    Operand attn{&ctx_.scratch(out_, window_floats), 0};
    ctx_.vision_ops.sam_windows(ctx_.batch, normed, windows, n, g, C, S, false);
    attend(block, windows, seqs, S, attn);
    ctx_.vision_ops.sam_windows(ctx_.batch, x, attn, n, g, C, S, true);
  }
  layer_norm(ctx_, block.norm2, x, normed, T);
  Operand hidden{&ctx_.scratch(hidden_, static_cast<uint64_t>(T) * dims_.mlp), 0};
  linear(ctx_, block.lin1, normed, C, hidden, block.lin1.out, T, Activation::GeluErf);
  linear(ctx_, block.lin2, hidden, block.lin1.out, normed, C, T);
  ctx_.ops.axpy(ctx_.batch, x, 1.0f, normed, T * C);
}

/* out[seqs*S*S, width] = proj(attention(qkv(in))) with the decomposed rel-pos bias */
void GpuSam::attend(Block& block, Operand in, uint32_t seqs, uint32_t S, Operand out) {
  const uint32_t C = static_cast<uint32_t>(dims_.width), H = static_cast<uint32_t>(dims_.heads), D = C / H;
  const uint32_t rows = seqs * S * S;
  Buffer& qkv = ctx_.scratch(qkv_, static_cast<uint64_t>(rows) * 3 * C);
  Operand attn{&ctx_.scratch(attn_, static_cast<uint64_t>(rows) * C), 0};
  linear(ctx_, block.qkv, in, C, Operand{&qkv, 0}, 3 * C, rows);

  // Offsets along an axis of S positions span 2S - 1 table rows; a stored table of another length
  // (global blocks on a grid that is not the stored one) is linearly interpolated, once per side.
  const uint32_t needed = 2 * S - 1;
  RelativePositions rel{ctx_.params.at(0).buffer, block.rel, block.rel + static_cast<uint64_t>(block.rel_rows) * D, S};
  if (needed != block.rel_rows) {
    std::unique_ptr<Buffer>& tables = block.resized[S];
    if (!tables) {
      std::vector<float> resized(2 * static_cast<size_t>(needed) * D);
      resize_linear(block.rel_h.data(), block.rel_rows, D, resized.data(), needed);
      resize_linear(block.rel_w.data(), block.rel_rows, D, resized.data() + static_cast<size_t>(needed) * D, needed);
      tables = std::make_unique<Buffer>(ctx_.device, resized.size() * sizeof(float));
      ctx_.transfer.upload(*tables, 0, resized.data(), resized.size() * sizeof(float));
    }
    rel = RelativePositions{tables.get(), 0, static_cast<uint64_t>(needed) * D, S};
  }
  Operand terms{&ctx_.scratch(rel_bias_, static_cast<uint64_t>(rows) * H * 2 * S), 0};
  ctx_.vision_ops.sam_rel_bias(ctx_.batch, qkv, 0, 3 * C, rows, H, D, rel, terms);
  const RelativeBias bias{terms, S};
  ctx_.vision_ops.attention(ctx_.batch, qkv, 0, C, 2 * C, 3 * C, attn, C, seqs, S * S, H, D,
                            1.0f / std::sqrt(static_cast<float>(D)), &bias);
  linear(ctx_, block.proj, attn, C, out, C, rows);
}

}  // namespace scriptorium::vk
