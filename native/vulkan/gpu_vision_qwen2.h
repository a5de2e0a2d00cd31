// DeepSeek-OCR-2's Qwen2 encoder on the device (cpu/cpu_vision_qwen2.h on the CPU, docs/model.md §3.4, §5.4):
// each view's SAM tokens followed by the learned queries of its size, pre-RMSNorm Qwen2 layers
// (q/k/v with biases in one fused product, rotate-half RoPE on positions 0..2n-1, grouped-query
// attention under the causal-flow mask, SwiGLU MLP), and the final RMSNorm of the query rows.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/vision_dims.h"
#include "vulkan/gpu_vision_layers.h"

namespace scriptorium::vk {

class GpuQwen2 {
 public:
  // query_tokens[i] = rows of query_<dims.query_sides[i]>.weight: the SAM token count of that side.
  GpuQwen2(GpuVisionContext& ctx, const Checkpoint& checkpoint, const Qwen2Dims& dims,
           const std::vector<int64_t>& query_tokens);

  // The most f32 elements one view of `tokens` tokens needs in any one activation buffer.
  uint64_t view_floats(uint32_t tokens) const;
  // The most views of `tokens` tokens one encode() takes (its row-wise shaders' dispatch limit).
  uint32_t max_views(uint32_t tokens) const { return kMaxGroups / (2 * tokens); }

  /* out[n, tokens, dim] = final-normed query rows of Qwen2([visual[n, tokens, dim] ; queries[tokens, dim]]) */
  void encode(Operand visual, uint32_t n, uint32_t tokens, Operand out);

 private:
  struct Layer {
    Operand input_norm, post_norm;  // bf16 [dim]
    Operand q, k, v;                // bf16 [dim, dim], [kv_width, dim], [kv_width, dim]
    uint64_t qkv_bias = 0;          // params offset of f32 [dim + 2 kv_width]: the q, k and v biases
    Operand o, gate, up, down;      // bf16 [dim, dim], [mlp, dim], [mlp, dim], [dim, mlp]
  };

  Qwen2Dims dims_;
  GpuVisionContext& ctx_;
  std::vector<Layer> layers_;
  Operand final_norm_;                    // bf16 [dim]
  std::map<uint32_t, uint64_t> queries_;  // SAM tokens -> params offset of the query rows f32 [tokens, dim]
  std::unique_ptr<Buffer> rope_table_;    // positions up to twice the largest query set
  std::unique_ptr<Buffer> positions_;  // int32 [rows]: each row's position in its view's sequence
  std::unique_ptr<Buffer> x_, normed_, qkv_, attn_, gate_, up_;
};

}  // namespace scriptorium::vk
