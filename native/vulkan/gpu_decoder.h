// The DeepSeek3B-MoE decoder on a Vulkan device: the same passes as the CPU Decoder (decoder.h) over
// a batch of sequences, with the weights, activations and KV caches in device memory. Per call only
// token ids, positions, banned ids and routing lists go up, and only the argmax ids (and logits rows
// when asked) come back. MoE routing (softmax, top-k) runs on the device; the per-expert row lists are built on
// the host from the downloaded top-k ids, one small read per MoE layer.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "../src/decoder.h"
#include "../src/decoder_weights.h"
#include "../src/kv_slot_rules.h"
#include "buffers.h"
#include "pipelines.h"
#include "shader_ops.h"
#include "weights.h"

namespace scriptorium::vk {

// One sequence's keys and values on the device, per layer rows of kv_heads * head_dim values with
// RoPE applied, in the slots KvSlotRules gives (the prefill, then V3's ring of sliding_window slots),
// stored as `dtype`: F32, or IEEE halves packed two to a word (rounded as the CPU's KvCache rounds
// them), each row then padded to an even count of halves so that it starts on a word.
class GpuKvCache {
 public:
  GpuKvCache(Device& device, const DecoderDims& dims, KvCacheDtype dtype);

  KvCacheDtype dtype() const { return dtype_; }
  int64_t length() const { return rules_.length(); }
  int64_t prefix_length() const { return rules_.prefix_length(); }
  size_t bytes() const { return k_ ? k_->bytes() + v_->bytes() : 0; }
  // Elements of the cache's dtype from one row to the next (kv_heads * head_dim, rounded up to even for half).
  int64_t row_stride() const { return row_stride_; }

 private:
  friend class GpuDecoder;
  // Grows to at least `rows` slots per layer, copying what is stored (recorded into batch).
  void reserve_rows(CommandBatch& batch, int64_t rows);

  uint64_t row_bytes() const { return static_cast<uint64_t>(row_stride_) * (dtype_ == KvCacheDtype::F32 ? 4 : 2); }

  Device& device_;
  DecoderDims dims_;
  KvCacheDtype dtype_;
  KvSlotRules rules_;
  int64_t row_stride_;
  int64_t capacity_ = 0;
  std::unique_ptr<Buffer> k_, v_;  // [layers][capacity_][row_stride_]
};

class GpuDecoder {
 public:
  // matmul_path: the shader path of the matrix products (model_matmul_path); precision: their
  // activations, as the CPU Decoder's (the vocabulary head and the router stay exact).
  GpuDecoder(Device& device, const Checkpoint& checkpoint, const DecoderDims& dims, const std::string& matmul_path,
             Precision precision);

  const DecoderDims& dims() const { return dims_; }
  uint64_t weight_bytes() const { return weights_.bytes(); }

  // Decoder::forward on the device: entries[b].cache is unused, caches[b] is the sequence's cache.
  // Same results contract (best ids, logits rows of the entries that want them), same errors, and
  // the caches are left untouched when the input is rejected.
  void forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits, int32_t* best);

 private:
  using Mlp = MlpWeights<Operand>;
  using Layer = LayerWeights<Operand, Operand>;  // the router uploaded as BF16 like the matrices

  void validate(const std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches) const;
  void run_forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits, int32_t* best);
  void mlp(const Mlp& m, Operand in, uint32_t rows);  // out_ = MLP(in rows); gate_/up_ as scratch
  void feed_forward(const Layer& layer, uint32_t rows);
  Buffer& scratch(std::unique_ptr<Buffer>& buffer, uint64_t bytes);
  void release_scratch();  // frees every activation buffer; the next call makes them again
  template <typename T>
  Buffer& upload(std::unique_ptr<Buffer>& buffer, const std::vector<T>& host);

  Device& device_;
  DecoderDims dims_;
  Transfer transfer_;
  WeightArena weights_;
  ShaderOps ops_;
  CommandBatch batch_;
  Operand embed_, final_norm_, lm_head_;
  std::vector<Layer> layers_;
  std::unique_ptr<Buffer> rope_table_;

  std::unique_ptr<Buffer> x_, norm_, q_, k_, v_, attn_, proj_, gate_, up_, out_, expert_in_, router_logits_;
  std::unique_ptr<Buffer> topk_ids_, topk_weights_, ids_, positions_, rowinfo_, embeds_, expert_rows_, expert_weights_;
  std::unique_ptr<Buffer> last_index_, last_, logits_, best_, bans_, banned_;
};

}  // namespace scriptorium::vk
