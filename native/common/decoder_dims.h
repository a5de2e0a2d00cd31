// The decoder's dimensions, as read from config.json (src/engine/model-config.ts).
#pragma once
#include <cstdint>

namespace scriptorium {

struct DecoderDims {
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t intermediate = 0;      // dense FFN width (layers < first_k_dense)
  int64_t moe_intermediate = 0;  // width of one routed expert
  int64_t n_routed = 0, top_k = 0, n_shared = 0, first_k_dense = 0, moe_layer_freq = 1;
  int64_t vocab = 0, max_positions = 0;
  float rms_eps = 1e-6f, rope_theta = 10000.f, routed_scaling = 1.f;
  bool norm_topk = false;
  int64_t sliding_window = 0;  // 0: full causal attention (V1/V2); W > 0: R-SWA window (V3)

  bool is_moe_layer(int64_t layer) const {
    return n_routed > 0 && layer >= first_k_dense && layer % moe_layer_freq == 0;
  }
  void validate() const;  // throws std::invalid_argument on inconsistent dimensions
};

// DecoderDims from its fields under the names the TypeScript side gives them (DecoderDims in
// src/engine/model-config.ts), each read through integer(name), real(name) or boolean(name): the
// one mapping every reader of those names (the addon, the native test programs) goes through.
template <typename Integer, typename Real, typename Boolean>
DecoderDims decoder_dims_from(const Integer& integer, const Real& real, const Boolean& boolean) {
  DecoderDims d;
  d.hidden = integer("hidden");
  d.layers = integer("layers");
  d.heads = integer("heads");
  d.kv_heads = integer("kvHeads");
  d.head_dim = integer("headDim");
  d.intermediate = integer("intermediate");
  d.moe_intermediate = integer("moeIntermediate");
  d.n_routed = integer("routedExperts");
  d.top_k = integer("expertsPerToken");
  d.n_shared = integer("sharedExperts");
  d.first_k_dense = integer("firstDenseLayers");
  d.moe_layer_freq = integer("moeLayerFreq");
  d.vocab = integer("vocab");
  d.max_positions = integer("maxPositions");
  d.rms_eps = real("rmsEps");
  d.rope_theta = real("ropeTheta");
  d.routed_scaling = real("routedScaling");
  d.norm_topk = boolean("normTopk");
  d.sliding_window = integer("slidingWindow");
  return d;
}

}  // namespace scriptorium
