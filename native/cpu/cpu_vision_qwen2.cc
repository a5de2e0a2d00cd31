#include "cpu/cpu_vision_qwen2.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cpu/attention.h"

namespace scriptorium {

Qwen2Encoder::Qwen2Encoder(const Checkpoint& checkpoint, const Qwen2Dims& dims, const std::vector<int64_t>& query_tokens,
                           ThreadPool& pool, Precision precision)
    : dims_(dims), pool_(pool), precision_(precision), kernels_(active_kernels()) {
  dims_.validate();
  if (query_tokens.size() != dims_.query_sides.size())
    throw std::invalid_argument("Qwen2 encoder: one query token count per query side");
  const std::string p = "model.qwen2_model.";
  const int64_t D = dims_.dim, KW = dims_.kv_heads * (D / dims_.heads);
  auto bf16 = [&](const std::string& name, std::vector<int64_t> shape) {
    return reinterpret_cast<const bf16_t*>(checkpoint.get(name, shape).data);
  };
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string l = p + "model.model.layers." + std::to_string(i) + ".";
    layers_.push_back(Layer{bf16(l + "input_layernorm.weight", {D}), bf16(l + "post_attention_layernorm.weight", {D}),
                            load_linear(checkpoint, l + "self_attn.q_proj", D, D, true),
                            load_linear(checkpoint, l + "self_attn.k_proj", KW, D, true),
                            load_linear(checkpoint, l + "self_attn.v_proj", KW, D, true),
                            load_linear(checkpoint, l + "self_attn.o_proj", D, D, false),
                            load_linear(checkpoint, l + "mlp.gate_proj", dims_.mlp, D, false),
                            load_linear(checkpoint, l + "mlp.up_proj", dims_.mlp, D, false),
                            load_linear(checkpoint, l + "mlp.down_proj", D, dims_.mlp, false)});
  }
  final_norm_ = bf16(p + "model.model.norm.weight", {D});
  for (size_t i = 0; i < query_tokens.size(); ++i) {
    const std::string name = p + "query_" + std::to_string(dims_.query_sides[i]) + ".weight";
    queries_.push_back(QuerySet{query_tokens[i], load_f32(checkpoint, name, {query_tokens[i], D})});
  }
}

/* y[rows, dim] = RMSNorm(x[rows, dim]) * w */
void Qwen2Encoder::rms_norm(const float* x, const bf16_t* w, float* y, int64_t rows) const {
  const int64_t D = dims_.dim;
  pool_.parallel_for(rows, std::max<int64_t>(1, 4096 / D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels_.rmsnorm(x + r * D, w, y + r * D, D, dims_.rms_eps);
  });
}

/* out[n, tokens, dim] = final-normed query rows of Qwen2([visual ; queries]) */
void Qwen2Encoder::encode(const float* visual, int64_t n, int64_t tokens, float* out, const BetweenLayers& between_layers) const {
  const auto set = std::find_if(queries_.begin(), queries_.end(), [&](const QuerySet& q) { return q.tokens == tokens; });
  if (n <= 0 || set == queries_.end())
    throw std::invalid_argument("Qwen2 encoder: no learned query set for " + std::to_string(tokens) + " visual tokens");
  const int64_t D = dims_.dim, H = dims_.heads, KVH = dims_.kv_heads, hd = D / H, KW = KVH * hd, F = dims_.mlp;
  const int64_t L = 2 * tokens, rows = n * L;

  LargeBuffer<float> x(rows * D);
  for (int64_t v = 0; v < n; ++v) {
    std::copy(visual + v * tokens * D, visual + (v + 1) * tokens * D, x.data() + v * L * D);
    std::copy(set->rows.begin(), set->rows.end(), x.data() + (v * L + tokens) * D);
  }

  LargeBuffer<float> h(rows * D), q(rows * D), k(rows * KW), val(rows * KW), attn(rows * D), gate(rows * F), up(rows * F);
  AttentionHooks mask;
  mask.visible_keys = [tokens](int64_t t) { return t < tokens ? tokens : t + 1; };
  for (const Layer& layer : layers_) {
    rms_norm(x.data(), layer.input_norm, h.data(), rows);
    linear(pool_, layer.q, h.data(), q.data(), rows, precision_);
    linear(pool_, layer.k, h.data(), k.data(), rows, precision_);
    linear(pool_, layer.v, h.data(), val.data(), rows, precision_);
    pool_.parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        rope_rotate_half(q.data() + r * D, H, hd, r % L, dims_.rope_theta);
        rope_rotate_half(k.data() + r * KW, KVH, hd, r % L, dims_.rope_theta);
      }
    });
    const AttentionTensors tensors{q.data(), D, k.data(), KW, val.data(), KW, attn.data(), D};
    attention(pool_, tensors, AttentionShape{n, L, L, H, KVH, hd, 1.0f / std::sqrt(static_cast<float>(hd))}, precision_,
              mask);
    Epilogue residual;
    residual.residual = x.data();
    linear(pool_, layer.o, attn.data(), h.data(), rows, precision_, residual);

    rms_norm(x.data(), layer.post_norm, h.data(), rows);
    linear(pool_, layer.up, h.data(), up.data(), rows, precision_);
    Epilogue swiglu;
    swiglu.activation = Activation::SwiGlu;
    swiglu.up = up.data();
    linear(pool_, layer.gate, h.data(), gate.data(), rows, precision_, swiglu);
    linear(pool_, layer.down, gate.data(), h.data(), rows, precision_, residual);
    between_layers();
  }
  for (int64_t v = 0; v < n; ++v)
    rms_norm(x.data() + (v * L + tokens) * D, final_norm_, out + v * tokens * D, tokens);
}

}  // namespace scriptorium
