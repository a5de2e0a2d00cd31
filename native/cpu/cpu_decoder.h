// The DeepSeek3B-MoE decoder shared by V1/V2/V3: embeddings, pre-norm layers (dense FFN for the
// first layers, routed + shared experts after), final norm and lm_head. V3's R-SWA keeps the whole
// prefill in the KV cache plus a ring of the most recent generated tokens.
// Every forward call takes a batch of sequences, each with one or more new tokens, so decode steps
// of concurrent requests share one pass over the weights.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/decoder_dims.h"
#include "common/decoder_weights.h"
#include "common/forward_entry.h"
#include "common/kv_cache_dtype.h"
#include "common/kv_slot_rules.h"
#include "common/safetensors.h"
#include "common/thread_pool.h"
#include "cpu/attention.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/quant_int8.h"

namespace scriptorium {

// Keys and values of one sequence, per layer, rows of kv_heads*head_dim values with RoPE already
// applied, in the slots KvSlotRules gives (kv_slot_rules.h), stored as `dtype`.
class KvCache {
 public:
  KvCache(const DecoderDims& dims, KvCacheDtype dtype);

  KvCacheDtype dtype() const { return dtype_; }
  int64_t length() const { return rules_.length(); }
  int64_t prefix_length() const { return rules_.prefix_length(); }
  int64_t slots() const { return capacity_rows_; }
  size_t bytes() const;
  // Keys / values of one layer: slots() rows of kv_heads*head_dim values, of the cache's dtype.
  const float* keys_f32(int64_t layer) const { return rows32_.data() + block_offset(layer, 0); }
  const float* values_f32(int64_t layer) const { return rows32_.data() + block_offset(layer, 1); }
  const f16_t* keys_f16(int64_t layer) const { return rows16_.data() + block_offset(layer, 0); }
  const f16_t* values_f16(int64_t layer) const { return rows16_.data() + block_offset(layer, 1); }
  // Number of leading slots a query at `pos` attends to (all visible keys are slots [0, n)).
  int64_t visible_slots(int64_t pos) const { return rules_.visible_slots(pos); }

 private:
  friend class Decoder;
  void reserve_rows(int64_t rows);
  // Stores one token's key and value rows (F32, kv_heads*head_dim each) at `slot` of `layer`.
  void store(const KernelSet& kernels, int64_t layer, int64_t slot, const float* key, const float* value);
  // Where layer's keys (kind 0) or values (kind 1) start in the cache's one buffer, in values.
  int64_t block_offset(int64_t layer, int64_t kind) const { return (2 * layer + kind) * capacity_rows_ * row_width_; }

  DecoderDims dims_;
  KvCacheDtype dtype_;
  KvSlotRules rules_;
  int64_t row_width_;
  int64_t capacity_rows_ = 0;
  // [layers][keys, values][capacity_rows_ * row_width_] in one buffer of the cache's dtype (the other
  // stays empty), on huge pages: a decode step reads every cache of the batch, and with 4 KiB pages
  // the walks of their many TLB misses took over a quarter of the attention's time. One buffer for
  // all layers, because a layer's keys alone are often under 2 MiB (V1: 819 slots), and a mapping
  // smaller than a huge page gets none (bench/RESULTS.md).
  LargeBuffer<float> rows32_;
  LargeBuffer<f16_t> rows16_;
};

// How the routed and shared experts and the vocabulary head are held: the checkpoint's BF16, or
// int8 with one scale per kInt8Group columns, converted at load (docs/model.md, "Int8 weights").
enum class WeightQuantization { None, Int8 };

class Decoder {
 public:
  // `precision` applies to every BF16 product but the vocabulary head's, whose greedy ids stay those
  // of exact products (fast precision computes them in one product and checks the near-best again
  // exactly: head_chunk_norms_), and to the int8 expert products (matmul_int8_group); an int8 head
  // is always exact. With a
  // `packed_weights_dir`, the packed BF16 weights live in a file there that every process loading
  // this checkpoint on the node maps (PackedWeightsFile); without one, in this process's memory.
  Decoder(const Checkpoint& checkpoint, const DecoderDims& dims, ThreadPool& pool, Precision precision,
          WeightQuantization quantization = WeightQuantization::None, const std::string& packed_weights_dir = "");

  const DecoderDims& dims() const { return dims_; }
  // Bytes of the int8 copies made at load (0 unquantised): process memory, while the BF16 pages
  // they replace are released from it.
  size_t quantized_bytes() const;
  // Routed experts run so far, summed over MoE layers and forward calls: each distinct expert a
  // layer's batch selects counts once (the bench derives the bytes a decode step reads from it).
  uint64_t routed_expert_passes() const { return routed_expert_passes_; }

  // Runs every entry's new tokens through the model, appending to its cache. For each entry's last
  // token, best[b] is the argmax of its logits over the ids not banned (lowest id on ties; 0 when
  // every id is banned), logprob[b] the log-softmax of its logits over the whole vocabulary (banned
  // ids included) at best[b], and entries that want them get their logits row: logits[rows, vocab],
  // one row per such entry in entry order. The vocabulary head streams: chunks of it are computed,
  // reduced (argmax and log-sum-exp) and dropped, so only wanted rows are ever stored. Throws
  // std::invalid_argument for bad ids, a full context or a repeated cache; the caches are left
  // untouched in that case.
  void forward(std::vector<ForwardEntry>& entries, float* logits, int32_t* best, float* logprob);

 private:
  using Expert = MlpWeights<Bf16Weight>;
  // BF16 weights as mapped, or packed (pack_weights); the router [n_routed, hidden] in F32
  // (router math runs in F32).
  using Layer = LayerWeights<Bf16Weight, std::vector<float>>;

  struct Int8Expert {
    Int8Matrix gate, up, down;
  };
  struct Int8Layer {
    std::vector<Int8Expert> experts;  // [n_routed]
    Int8Expert shared;
  };
  // Packs every layer's projections and dense MLPs, and the experts and the vocabulary head unless
  // they are int8, where the kernel set multiplies packed weights, on the pool's threads. Decode and
  // prefill rows run through the same kernels either way, so a decode row is bitwise the same
  // beside another request's prefill rows.
  void pack_weights(const Checkpoint& checkpoint, bool bf16_experts, const std::string& packed_weights_dir);
  // Converts every MoE layer's experts and the head, releasing their mapped BF16 pages.
  void quantize_int8_weights(const Checkpoint& checkpoint);

  void attention(int64_t layer, std::vector<ForwardEntry>& entries, int64_t rows);
  // One chunk of the head for one entry: its best id not banned (-1: every id banned) with its
  // logit, and the chunk's log-sum-exp block (largest logit, sum of exp(logit - largest)).
  struct ChunkHead {
    float value;
    int32_t id;
    float max, sum_exp;
  };
  void head(std::vector<ForwardEntry>& entries, float* logits, int32_t* best, float* logprob);
  // Head chunk `c` of row `b` of last_rows_, reduced to its ChunkHead; y holds the chunk's logits.
  ChunkHead head_chunk(int64_t c, int64_t b, const std::vector<ForwardEntry>& entries, const float* y) const;
  // After a fast head: each row's best not banned (head_best_), from the panels of the head whose
  // logits could hold it, computed again exactly.
  void recheck_head_exactly(const std::vector<ForwardEntry>& entries);
  // The fast head's error bound: with x a row of last_rows_, every logit of chunk c computed with x
  // rounded once to BF16 lies within head_error_ * |x| * head_chunk_norms_[c] of the exact
  // products' logit (docs/engine.md, "The vocabulary head in fast precision"). Empty: no fast head.
  void measure_head_norms();
  // One MLP over some rows of norm_, each row's output added to x_ with its weight.
  struct ExpertTask {
    const Expert* expert;
    int64_t width;
    const std::vector<std::pair<int64_t, float>>* rows;  // (row, weight)
    const Int8Expert* int8 = nullptr;  // the int8 copy the products read instead, when quantised
  };
  void feed_forward(const Layer& layer, int64_t rows);
  void run_experts();
  void run_products();

  DecoderDims dims_;
  ThreadPool& pool_;
  Precision precision_;
  const KernelSet& kernels_;
  const bf16_t* embed_ = nullptr;    // [vocab, hidden]
  const bf16_t* final_norm_ = nullptr;
  Bf16Weight lm_head_;               // [vocab, hidden]
  std::vector<Layer> layers_;
  uint64_t routed_expert_passes_ = 0;
  std::vector<Int8Layer> int8_layers_;  // [layers] with --quantize int8, else empty
  Int8Matrix int8_head_;                // [vocab, hidden] with --quantize int8
  std::vector<float> head_chunk_norms_;  // [head chunks] largest |row| of lm_head_ in the chunk, rounded up
  double head_error_ = 0;

  // Scratch, grown on demand and reused across calls.
  std::vector<float> x_, norm_, q_, k_, v_, attn_, proj_, gate_, up_, router_logits_;
  std::vector<float> expert_in_, expert_out_, last_rows_;
  std::vector<int64_t> row_pos_, row_entry_;
  std::vector<CachedQueries> queries_;                  // [entries] their rows of q_ and attn_
  CachedAttentionScratch attention_scratch_;
  std::vector<std::vector<std::pair<int64_t, float>>> rows_of_expert_;  // [n_routed] (row, weight)
  std::vector<int64_t> expert_order_;                                   // [n_routed]
  std::vector<std::pair<int64_t, float>> all_rows_;                     // every row, weight 1
  std::vector<ExpertTask> tasks_;
  std::vector<MatmulBf16> products_;
  std::vector<MatmulInt8> int8_products_;
  std::vector<int64_t> logits_row_;                  // [entries] row in `logits`, or -1
  std::vector<ChunkHead> chunk_head_;                // [head chunks, entries]
  struct HeadBest {
    float value;
    int32_t id;  // -1: every id banned, value is id 0's logit
  };
  struct Recheck {
    int64_t panel, row;
    HeadBest best{};  // the panel's exact best not banned
  };
  std::vector<float> head_panel_max_;  // [head panels, entries] a fast head's largest logit per panel
  std::vector<Recheck> recheck_;       // the panels computed again exactly, by row, in id order
  std::vector<HeadBest> head_best_;    // [entries] after recheck_head_exactly
};

}  // namespace scriptorium
