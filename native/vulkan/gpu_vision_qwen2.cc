#include "vulkan/gpu_vision_qwen2.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace scriptorium::vk {

GpuQwen2::GpuQwen2(GpuVisionContext& ctx, const Checkpoint& checkpoint, const Qwen2Dims& dims,
                   const std::vector<int64_t>& query_tokens)
    : dims_(dims), ctx_(ctx) {
  dims_.validate();
  if (query_tokens.size() != dims_.query_sides.size())
    throw std::invalid_argument("Qwen2 encoder: one query token count per query side");
  const int64_t D = dims_.dim, hd = D / dims_.heads, KW = dims_.kv_heads * hd, F = dims_.mlp;
  if (hd > VisionShaderOps::kMaxHeadDim) throw VulkanError("the GPU backend supports Qwen2 encoder head_dim up to 128");
  const std::string p = "model.qwen2_model.";
  auto upload = [&](const std::string& name, std::vector<int64_t> shape) {
    return ctx.weights.upload_bf16(checkpoint.get(name, shape));
  };
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string l = p + "model.model.layers." + std::to_string(i) + ".";
    Layer layer;
    layer.input_norm = upload(l + "input_layernorm.weight", {D});
    layer.post_norm = upload(l + "post_attention_layernorm.weight", {D});
    layer.q = upload(l + "self_attn.q_proj.weight", {D, D});
    layer.k = upload(l + "self_attn.k_proj.weight", {KW, D});
    layer.v = upload(l + "self_attn.v_proj.weight", {KW, D});
    std::vector<float> bias = checkpoint.f32(l + "self_attn.q_proj.bias", {D});
    for (const char* name : {"self_attn.k_proj.bias", "self_attn.v_proj.bias"}) {
      const std::vector<float> b = checkpoint.f32(l + name, {KW});
      bias.insert(bias.end(), b.begin(), b.end());
    }
    layer.qkv_bias = ctx.params.add(bias);
    layer.o = upload(l + "self_attn.o_proj.weight", {D, D});
    layer.gate = upload(l + "mlp.gate_proj.weight", {F, D});
    layer.up = upload(l + "mlp.up_proj.weight", {F, D});
    layer.down = upload(l + "mlp.down_proj.weight", {D, F});
    layers_.push_back(layer);
  }
  final_norm_ = upload(p + "model.model.norm.weight", {D});
  int64_t most_tokens = 0;
  for (size_t i = 0; i < query_tokens.size(); ++i) {
    const std::string name = p + "query_" + std::to_string(dims_.query_sides[i]) + ".weight";
    queries_[static_cast<uint32_t>(query_tokens[i])] = ctx.params.add(checkpoint.f32(name, {query_tokens[i], D}));
    most_tokens = std::max(most_tokens, query_tokens[i]);
  }
  const std::vector<float> table = rope_table(2 * most_tokens, hd, dims_.rope_theta);
  rope_table_ = std::make_unique<Buffer>(ctx.device, table.size() * sizeof(float));
  ctx.transfer.upload(*rope_table_, 0, table.data(), table.size() * sizeof(float));
}

uint64_t GpuQwen2::view_floats(uint32_t tokens) const {
  const uint64_t D = dims_.dim, KW = dims_.kv_heads * (D / dims_.heads);
  return 2ull * tokens * std::max<uint64_t>(D + 2 * KW, dims_.mlp);
}

/* out[n, tokens, dim] = final-normed query rows of Qwen2([visual ; queries]) */
void GpuQwen2::encode(Operand visual, uint32_t n, uint32_t tokens, Operand out) {
  const auto set = queries_.find(tokens);
  if (n == 0 || set == queries_.end())
    throw std::invalid_argument("Qwen2 encoder: no learned query set for " + std::to_string(tokens) + " visual tokens");
  const uint32_t D = static_cast<uint32_t>(dims_.dim), H = static_cast<uint32_t>(dims_.heads);
  const uint32_t KVH = static_cast<uint32_t>(dims_.kv_heads), hd = D / H, KW = KVH * hd, QKV = D + 2 * KW;
  const uint32_t F = static_cast<uint32_t>(dims_.mlp), L = 2 * tokens, rows = n * L;
  if (rows > kMaxGroups) throw std::invalid_argument("Qwen2 encoder: too many views for one pass");

  std::vector<int32_t> positions(rows);
  for (uint32_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>(r % L);
  Buffer& pos = ctx_.scratch(positions_, rows);
  ctx_.transfer.upload(pos, 0, positions.data(), positions.size() * sizeof(int32_t));
  Operand x{&ctx_.scratch(x_, static_cast<uint64_t>(rows) * D), 0};
  Operand normed{&ctx_.scratch(normed_, static_cast<uint64_t>(rows) * D), 0};
  Buffer& qkv = ctx_.scratch(qkv_, static_cast<uint64_t>(rows) * QKV);
  Operand attn{&ctx_.scratch(attn_, static_cast<uint64_t>(rows) * D), 0};
  Operand gate{&ctx_.scratch(gate_, static_cast<uint64_t>(rows) * F), 0};
  Operand up{&ctx_.scratch(up_, static_cast<uint64_t>(rows) * F), 0};

  ShaderOps& ops = ctx_.ops;
  VisionShaderOps& vops = ctx_.vision_ops;
  CommandBatch& batch = ctx_.batch;
  vops.copy_rows(batch, visual, tokens * D, D, x, L * D, D, n, tokens, D);
  vops.copy_rows(batch, ctx_.params.at(set->second), 0, D, Operand{x.buffer, tokens * D}, L * D, D, n, tokens, D);
  const float eps = dims_.rms_eps, scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (const Layer& layer : layers_) {
    ops.rmsnorm(batch, x, D, layer.input_norm, normed, D, rows, D, eps);
    ops.matmul_bf16(batch, normed, D, layer.q, Operand{&qkv, 0}, QKV, rows, D, D);
    ops.matmul_bf16(batch, normed, D, layer.k, Operand{&qkv, D}, QKV, rows, KW, D);
    ops.matmul_bf16(batch, normed, D, layer.v, Operand{&qkv, D + KW}, QKV, rows, KW, D);
    vops.bias_act(batch, Operand{&qkv, 0}, rows * QKV, ctx_.params.at(layer.qkv_bias), QKV, Activation::None);
    ops.rope(batch, Operand{&qkv, 0}, QKV, Operand{&pos, 0}, *rope_table_, rows, H, hd);
    ops.rope(batch, Operand{&qkv, D}, QKV, Operand{&pos, 0}, *rope_table_, rows, KVH, hd);
    vops.attention(batch, qkv, 0, D, D + KW, QKV, attn, D, n, L, H, hd, scale, nullptr, AttentionKeys{H / KVH, tokens});
    ops.matmul_bf16(batch, attn, D, layer.o, normed, D, rows, D, D);
    ops.axpy(batch, x, 1.0f, normed, rows * D);

    ops.rmsnorm(batch, x, D, layer.post_norm, normed, D, rows, D, eps);
    ops.matmul_bf16(batch, normed, D, layer.gate, gate, F, rows, F, D);
    ops.matmul_bf16(batch, normed, D, layer.up, up, F, rows, F, D);
    ops.swiglu(batch, gate, up, gate, rows * F);
    ops.matmul_bf16(batch, gate, F, layer.down, normed, D, rows, D, F);
    ops.axpy(batch, x, 1.0f, normed, rows * D);
  }
  for (uint32_t v = 0; v < n; ++v)
    ops.rmsnorm(batch, Operand{x.buffer, (v * L + tokens) * D}, D, final_norm_,
                Operand{out.buffer, out.offset + static_cast<uint64_t>(v) * tokens * D}, D, tokens, D, eps);
}

}  // namespace scriptorium::vk
