// The DeepSeek3B-MoE decoder on a Vulkan device: the same passes as the CPU Decoder (cpu/cpu_decoder.h) over
// a batch of sequences, with the weights, activations and KV caches in device memory. Per call only
// token ids, positions, each row's visible keys, banned ids and replaced embedding rows go up, and
// only the argmax ids with their log-probabilities (and logits rows when asked) come back. MoE routing runs on the device too (softmax and top-k, the grouping of rows by expert,
// grouped expert products and their combine), so a call records every layer into one command batch
// and waits for the device once.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/decoder_weights.h"
#include "common/forward_entry.h"
#include "common/kv_cache_dtype.h"
#include "common/kv_slot_rules.h"
#include "common/precision.h"
#include "common/safetensors.h"
#include "vulkan/buffers.h"
#include "vulkan/pipelines.h"
#include "vulkan/shader_ops.h"
#include "vulkan/weights.h"

namespace scriptorium::vk {

// One sequence's keys and values on the device, per layer rows of kv_heads * head_dim values with
// RoPE applied, in the slots KvSlotRules gives (the prefill, then V3's ring of sliding_window slots),
// stored as `dtype`: F32, or IEEE halves packed two to a word (rounded as the CPU's KvCache rounds
// them), each row then padded to an even count of halves so that it starts on a word. Each layer has
// its own buffers, so one binding holds one layer's slots: at the official dimensions a layer of the
// longest V1/V2 sequence (8192 slots) takes 40 MiB in F32, a V3 layer 80 MiB in halves at its 32768
// positions, within the 128 MiB every Vulkan device can bind; a longer F32 layer than the device
// binds is refused (see reserve_rows).
class GpuKvCache {
 public:
  GpuKvCache(Device& device, const DecoderDims& dims, KvCacheDtype dtype);

  KvCacheDtype dtype() const { return dtype_; }
  int64_t length() const { return rules_.length(); }
  int64_t prefix_length() const { return rules_.prefix_length(); }
  size_t bytes() const { return capacity_ * row_bytes() * 2 * k_.size(); }
  // Elements of the cache's dtype from one row to the next (kv_heads * head_dim, rounded up to even for half).
  int64_t row_stride() const { return row_stride_; }

 private:
  friend class GpuDecoder;
  // Grows to at least `rows` slots per layer, copying what is stored (recorded into batch); throws
  // std::invalid_argument when one layer's slots would exceed the largest buffer the device binds.
  void reserve_rows(CommandBatch& batch, int64_t rows);

  uint64_t row_bytes() const { return static_cast<uint64_t>(row_stride_) * (dtype_ == KvCacheDtype::F32 ? 4 : 2); }

  Device& device_;
  DecoderDims dims_;
  KvCacheDtype dtype_;
  KvSlotRules rules_;
  int64_t row_stride_;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<Buffer>> k_, v_;  // per layer: [capacity_][row_stride_]
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
  // Same results contract (best ids, their log-probabilities, logits rows of the entries that want
  // them), same errors, and the caches are left untouched when the input is rejected.
  void forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits, int32_t* best,
               float* logprob);

 private:
  using Mlp = MlpWeights<Operand>;
  using Layer = LayerWeights<Operand, Operand>;  // the router uploaded in F32, the matrices in BF16

  void validate(const std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches) const;
  void run_forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits, int32_t* best,
                   float* logprob);
  void mlp(const Mlp& m, Operand in, uint32_t rows);  // out_ = MLP(in rows); gate_/up_ as scratch
  void feed_forward(int64_t l, uint32_t rows);
  void routed_experts(int64_t l, uint32_t rows);  // x += the routed experts' outputs of norm_ rows
  // A buffer of at least `bytes` in `buffer` (device-local, or host-visible for a call's inputs and results).
  Buffer& scratch(std::unique_ptr<Buffer>& buffer, uint64_t bytes, bool host_visible = false);
  void release_scratch();  // frees every activation buffer; the next call makes them again
  // A call's host inputs: each written into inputs_host_ and copied into *device (grown to fit) by
  // batch_, or only written when device is null. Returns their byte offsets in inputs_host_.
  struct HostInput {
    std::unique_ptr<Buffer>* device;
    const void* data;
    uint64_t bytes;
  };
  std::vector<uint64_t> stage_inputs(const std::vector<HostInput>& inputs);

  Device& device_;
  DecoderDims dims_;
  Transfer transfer_;
  WeightArena weights_;
  ShaderOps ops_;
  CommandBatch batch_;
  Operand final_norm_;
  RowBlocks embed_, lm_head_;  // [vocab, hidden] in blocks of rows, as many as one binding holds
  std::vector<Layer> layers_;  // their `experts` stay empty: the routed experts are in expert_stacks_
  struct ExpertStack {
    // bf16 [n_routed, moe_intermediate, hidden] and [n_routed, hidden, moe_intermediate], in ranges of
    // experts, as many as one binding holds
    RowBlocks gate, up, down;
  };
  std::vector<ExpertStack> expert_stacks_;  // per layer (unset in dense layers)
  std::unique_ptr<Buffer> rope_table_;

  std::unique_ptr<Buffer> x_, norm_, q_, k_, v_, attn_, proj_, gate_, up_, out_, expert_in_, router_logits_;
  std::unique_ptr<Buffer> topk_ids_, topk_weights_, ids_, positions_, rowinfo_;
  std::unique_ptr<Buffer> entry_rows_, entry_weights_, expert_blocks_, row_slots_;  // moe_align's lists
  std::unique_ptr<Buffer> last_index_, last_, logits_, best_, logprob_, bans_, banned_;
  std::unique_ptr<Buffer> inputs_host_, results_host_;  // host-visible: what a call sends and gets back
};

}  // namespace scriptorium::vk
