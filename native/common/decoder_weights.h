// The decoder's weights as the checkpoint names and shapes them, walked in one place: the CPU
// decoder maps them to BF16 pointers, the GPU decoder uploads them, both from this one layout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/decoder_dims.h"

namespace scriptorium {

// One gated MLP (a dense FFN, a routed expert, or the shared experts fused into one):
// gate, up [width, hidden], down [hidden, width].
template <typename Matrix>
struct MlpWeights {
  Matrix gate{}, up{}, down{};
  int64_t width = 0;
};

// Norms [hidden]; q [heads*head_dim, hidden]; k, v [kv_heads*head_dim, hidden]; o [hidden, heads*head_dim];
// MoE layers: router [n_routed, hidden], experts [n_routed], shared (when n_shared > 0).
template <typename Matrix, typename Router>
struct LayerWeights {
  Matrix input_norm{}, post_norm{}, wq{}, wk{}, wv{}, wo{};
  bool moe = false;
  MlpWeights<Matrix> dense;  // layers without experts
  Router router{};
  std::vector<MlpWeights<Matrix>> experts;
  MlpWeights<Matrix> shared;
};

// embed, lm_head [vocab, hidden]; final_norm [hidden].
template <typename Matrix, typename Router>
struct DecoderWeights {
  Matrix embed{}, final_norm{}, lm_head{};
  std::vector<LayerWeights<Matrix, Router>> layers;
};

// Builds the decoder's weights in checkpoint order: matrix(name, shape) -> Matrix for every weight
// but the MoE router, router(name, shape) -> Router for it (the CPU keeps the router in F32).
template <typename Matrix, typename Router, typename LoadMatrix, typename LoadRouter>
DecoderWeights<Matrix, Router> load_decoder_weights(const DecoderDims& dims, LoadMatrix matrix, LoadRouter router) {
  const int64_t H = dims.hidden, QW = dims.heads * dims.head_dim, KW = dims.kv_heads * dims.head_dim;
  auto mlp = [&](const std::string& prefix, int64_t width) {
    MlpWeights<Matrix> m;
    m.gate = matrix(prefix + "gate_proj.weight", std::vector<int64_t>{width, H});
    m.up = matrix(prefix + "up_proj.weight", std::vector<int64_t>{width, H});
    m.down = matrix(prefix + "down_proj.weight", std::vector<int64_t>{H, width});
    m.width = width;
    return m;
  };
  DecoderWeights<Matrix, Router> w;
  w.embed = matrix("model.embed_tokens.weight", std::vector<int64_t>{dims.vocab, H});
  w.layers.resize(dims.layers);
  for (int64_t l = 0; l < dims.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights<Matrix, Router>& layer = w.layers[l];
    layer.input_norm = matrix(p + "input_layernorm.weight", std::vector<int64_t>{H});
    layer.post_norm = matrix(p + "post_attention_layernorm.weight", std::vector<int64_t>{H});
    layer.wq = matrix(p + "self_attn.q_proj.weight", std::vector<int64_t>{QW, H});
    layer.wk = matrix(p + "self_attn.k_proj.weight", std::vector<int64_t>{KW, H});
    layer.wv = matrix(p + "self_attn.v_proj.weight", std::vector<int64_t>{KW, H});
    layer.wo = matrix(p + "self_attn.o_proj.weight", std::vector<int64_t>{H, QW});
    layer.moe = dims.is_moe_layer(l);
    if (!layer.moe) {
      layer.dense = mlp(p + "mlp.", dims.intermediate);
      continue;
    }
    layer.router = router(p + "mlp.gate.weight", std::vector<int64_t>{dims.n_routed, H});
    for (int64_t e = 0; e < dims.n_routed; ++e)
      layer.experts.push_back(mlp(p + "mlp.experts." + std::to_string(e) + ".", dims.moe_intermediate));
    if (dims.n_shared > 0) layer.shared = mlp(p + "mlp.shared_experts.", dims.n_shared * dims.moe_intermediate);
  }
  w.final_norm = matrix("model.norm.weight", std::vector<int64_t>{H});
  w.lm_head = matrix("lm_head.weight", std::vector<int64_t>{dims.vocab, H});
  return w;
}

}  // namespace scriptorium
