#include "common/decoder_dims.h"

#include <stdexcept>
#include <string>

namespace scriptorium {

namespace {

void require_positive(int64_t value, const char* name) {
  if (value <= 0) throw std::invalid_argument(std::string("config.json: ") + name + " must be positive");
}

}  // namespace

void DecoderDims::validate() const {
  require_positive(hidden, "hidden_size");
  require_positive(layers, "num_hidden_layers");
  require_positive(heads, "num_attention_heads");
  require_positive(kv_heads, "num_key_value_heads");
  require_positive(head_dim, "head_dim");
  require_positive(vocab, "vocab_size");
  require_positive(max_positions, "max_position_embeddings");
  if (heads % kv_heads != 0)
    throw std::invalid_argument("config.json: num_attention_heads must be a multiple of num_key_value_heads");
  if (head_dim % 2 != 0) throw std::invalid_argument("config.json: head_dim must be even for rotary embeddings");
  if (first_k_dense > 0 || n_routed == 0) require_positive(intermediate, "intermediate_size");
  if (n_routed > 0) {
    require_positive(moe_intermediate, "moe_intermediate_size");
    require_positive(top_k, "num_experts_per_tok");
    require_positive(moe_layer_freq, "moe_layer_freq");
    if (top_k > n_routed) throw std::invalid_argument("config.json: num_experts_per_tok exceeds n_routed_experts");
  }
  if (n_shared < 0 || sliding_window < 0 || first_k_dense < 0)
    throw std::invalid_argument("config.json: negative n_shared_experts, first_k_dense_replace or sliding window");
}

}  // namespace scriptorium
