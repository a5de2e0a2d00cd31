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

#include "attention.h"
#include "kernels.h"
#include "ops.h"
#include "quant_int8.h"
#include "safetensors.h"
#include "thread_pool.h"

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

// Keys and values of one sequence, per layer, rows of kv_heads*head_dim floats with RoPE already
// applied. Slots [0, prefix) hold the first forward call's tokens; with a sliding window W, the
// generated token g (0-based) lives in slot prefix + g % W, so memory stops growing after W tokens.
class KvCache {
 public:
  explicit KvCache(const DecoderDims& dims);

  int64_t length() const { return length_; }        // tokens consumed = next absolute position
  int64_t prefix_length() const { return prefix_; }  // -1 before the first forward call
  int64_t slots() const { return capacity_rows_; }
  size_t bytes() const;
  // Keys / values of one layer: slots() rows of kv_heads*head_dim floats.
  const float* keys(int64_t layer) const { return k_[layer].data(); }
  const float* values(int64_t layer) const { return v_[layer].data(); }
  // Number of leading slots a query at `pos` attends to (all visible keys are slots [0, n)).
  int64_t visible_slots(int64_t pos) const;

 private:
  friend class Decoder;
  // Slot where the token at absolute position `pos` is stored.
  int64_t slot_of(int64_t pos) const;
  void reserve_rows(int64_t rows);

  DecoderDims dims_;
  int64_t row_width_;
  int64_t length_ = 0;
  int64_t prefix_ = -1;
  int64_t capacity_rows_ = 0;
  std::vector<std::vector<float>> k_, v_;  // [layers][capacity_rows_ * row_width_]
};

// One sequence's new tokens in a batched forward call.
struct ForwardEntry {
  KvCache* cache = nullptr;
  std::vector<int32_t> ids;            // [n] token ids, n >= 1
  std::vector<float> embeds;           // [embed_rows.size(), hidden] rows replacing token embeddings
  std::vector<int32_t> embed_rows;     // offsets within `ids` whose embedding is replaced
  bool want_logits = true;             // write the full logits row of the last token
  std::vector<int32_t> banned;         // ids the returned argmax skips (any order)
};

// How the routed and shared experts and the vocabulary head are held: the checkpoint's BF16, or
// int8 with one scale per kInt8Group columns, converted at load (docs/model.md, "Int8 weights").
enum class WeightQuantization { None, Int8 };

class Decoder {
 public:
  Decoder(const Checkpoint& checkpoint, const DecoderDims& dims, ThreadPool& pool,
          WeightQuantization quantization = WeightQuantization::None);

  const DecoderDims& dims() const { return dims_; }
  // Bytes of the int8 copies made at load (0 unquantised): process memory, while the BF16 pages
  // they replace are released from it.
  size_t quantized_bytes() const;
  // Routed experts run so far, summed over MoE layers and forward calls: each distinct expert a
  // layer's batch selects counts once (the bench derives the bytes a decode step reads from it).
  uint64_t routed_expert_passes() const { return routed_expert_passes_; }

  // Runs every entry's new tokens through the model, appending to its cache. For each entry's last
  // token, best[b] is the argmax of its logits over the ids not banned (lowest id on ties; 0 when
  // every id is banned), and entries that want them get their logits row: logits[rows, vocab], one
  // row per such entry in entry order. The vocabulary head streams: chunks of it are computed,
  // reduced and dropped, so only wanted rows are ever stored. Throws std::invalid_argument for bad
  // ids, a full context or a repeated cache; the caches are left untouched in that case.
  void forward(std::vector<ForwardEntry>& entries, float* logits, int32_t* best);

 private:
  struct Expert {
    const bf16_t *gate = nullptr, *up = nullptr, *down = nullptr;
  };
  struct Layer {
    const bf16_t *input_norm, *post_norm, *wq, *wk, *wv, *wo;
    Expert dense;                 // layers without experts
    std::vector<float> router;    // [n_routed, hidden] in F32 (router math runs in F32)
    std::vector<Expert> experts;  // [n_routed]
    Expert shared;                // n_shared experts fused into one MLP
    bool moe = false;
  };

  struct Int8Expert {
    Int8Matrix gate, up, down;
  };
  struct Int8Layer {
    std::vector<Int8Expert> experts;  // [n_routed]
    Int8Expert shared;
  };
  // Converts every MoE layer's experts and the head, releasing their mapped BF16 pages.
  void quantize_int8_weights(const Checkpoint& checkpoint);

  void attention(int64_t layer, std::vector<ForwardEntry>& entries, int64_t rows);
  void head(std::vector<ForwardEntry>& entries, float* logits, int32_t* best);
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
  const KernelSet& kernels_;
  const bf16_t* embed_ = nullptr;    // [vocab, hidden]
  const bf16_t* final_norm_ = nullptr;
  const bf16_t* lm_head_ = nullptr;  // [vocab, hidden]
  std::vector<Layer> layers_;
  uint64_t routed_expert_passes_ = 0;
  std::vector<Int8Layer> int8_layers_;  // [layers] with --quantize int8, else empty
  Int8Matrix int8_head_;                // [vocab, hidden] with --quantize int8

  // Scratch, grown on demand and reused across calls.
  std::vector<float> x_, norm_, q_, k_, v_, attn_, proj_, gate_, up_, router_logits_;
  std::vector<float> expert_in_, expert_out_, last_rows_;
  std::vector<int64_t> row_pos_, row_entry_;
  std::vector<CachedQueries> queries_;                  // [entries] their rows of q_ and attn_
  std::vector<std::pair<int64_t, int64_t>> single_rows_;  // attention scratch
  std::vector<std::vector<std::pair<int64_t, float>>> rows_of_expert_;  // [n_routed] (row, weight)
  std::vector<int64_t> expert_order_;                                   // [n_routed]
  std::vector<std::pair<int64_t, float>> all_rows_;                     // every row, weight 1
  std::vector<ExpertTask> tasks_;
  std::vector<MatmulBf16> products_;
  std::vector<MatmulInt8> int8_products_;
  std::vector<int64_t> logits_row_;                  // [entries] row in `logits`, or -1
  std::vector<std::pair<float, int32_t>> chunk_best_;  // [head chunks, entries] (value, id; -1: none)
};

}  // namespace scriptorium
