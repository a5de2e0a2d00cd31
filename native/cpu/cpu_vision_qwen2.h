// Qwen2 decoder used as a vision encoder (docs/model.md §3.4, §5.4; V2): the SAM tokens of a view are
// followed by as many learned queries, and the sequence runs through pre-RMSNorm Qwen2 layers (GQA
// with q/k/v biases, rotate-half RoPE on positions 0..2n-1, SwiGLU MLP) under the causal-flow mask:
// visual rows see every visual row only; query i sees every visual row and queries 0..i. The final
// RMSNorm'd query rows are the output.
#pragma once
#include <cstdint>
#include <vector>

#include "common/safetensors.h"
#include "common/vision_dims.h"
#include "common/thread_pool.h"
#include "cpu/cpu_vision_ops.h"
#include "cpu/kernels.h"

namespace scriptorium {

class Qwen2Encoder {
 public:
  // query_tokens[i] = rows of query_<query_sides[i]>.weight: the SAM token count of that side.
  Qwen2Encoder(const Checkpoint& checkpoint, const Qwen2Dims& dims, const std::vector<int64_t>& query_tokens,
               ThreadPool& pool, Precision precision);

  const Qwen2Dims& dims() const { return dims_; }

  /* out[n, tokens, dim] = final-normed query rows of Qwen2([visual[n, tokens, dim] ; queries[tokens, dim]]) */
  void encode(const float* visual, int64_t n, int64_t tokens, float* out, const BetweenLayers& between_layers) const;

 private:
  struct Layer {
    const bf16_t *input_norm = nullptr, *post_norm = nullptr;  // [dim]
    Linear q, k, v, o, gate, up, down;
  };
  struct QuerySet {
    int64_t tokens = 0;
    std::vector<float> rows;  // [tokens, dim]
  };

  /* y[rows, dim] = RMSNorm(x[rows, dim]) * w */
  void rms_norm(const float* x, const bf16_t* w, float* y, int64_t rows) const;

  Qwen2Dims dims_;
  ThreadPool& pool_;
  Precision precision_;
  const KernelSet& kernels_;
  std::vector<Layer> layers_;
  const bf16_t* final_norm_ = nullptr;
  std::vector<QuerySet> queries_;
};

}  // namespace scriptorium
