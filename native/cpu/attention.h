// Attention in one place: multi-head attention of many queries at once (the vision encoders, and
// a decoder prefill against its cache), and the decoder's attention of a batch of sequences
// against their KV caches, full causal (V1, V2) or R-SWA (V3). Activations are F32; in fast
// precision the many-query products run as single BF16 dot products where the kernel set has them.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace scriptorium {

// Multi-head attention over `batch` independent sequences. Row (b*queries + t) of Q holds the
// query t of sequence b, head h at columns [h*head_dim, (h+1)*head_dim); K and V likewise with
// kv_heads heads (head h reads kv head h / (heads / kv_heads)). Scores are built a few query rows
// at a time per task; no [queries, keys] matrix is ever held.
struct AttentionShape {
  int64_t batch = 0, queries = 0, keys = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.f;
};

struct AttentionTensors {
  const float* q = nullptr;
  int64_t ldq = 0;
  const float* k = nullptr;
  int64_t ldk = 0;
  const float* v = nullptr;
  int64_t ldv = 0;
  float* out = nullptr;
  int64_t ldo = 0;
};

struct AttentionHooks {
  // Adds the additive bias of query t (sequence b, head h) to scores[keys], already scaled;
  // scratch holds bias_scratch floats private to the calling thread. Empty: no bias.
  std::function<void(int64_t b, int64_t h, int64_t t, float* scores, float* scratch)> bias;
  int64_t bias_scratch = 0;
  // How many leading keys query t sees (1..keys); the rest are masked. Empty: all keys.
  std::function<int64_t(int64_t t)> visible_keys;
};

// Query rows attention() scores together: a call's rows in blocks of this many from its first.
constexpr int64_t kAttentionQueryBlock = 24;

/* out[b*queries+t, h*D:(h+1)*D] = softmax(scale * q.K^T + bias) V  for every sequence b, head h, query t.
   Exact: both products in F32. Fast, on a kernel set with gemm_nn_bf16: q, K, the probabilities and V
   each rounded once to BF16 for the two products (F32 accumulation); scale, bias (the hook sees F32
   scores), masks and softmax stay F32. Fast on other sets is exact. */
void attention(ThreadPool& pool, const AttentionTensors& tensors, const AttentionShape& shape, Precision precision,
               const AttentionHooks& hooks = {});

class KvCache;
struct DecoderDims;

// One sequence's new tokens in a decoder forward call: rows [first_row, first_row + rows) of the
// query and output matrices, at positions first_position, first_position + 1, ...; their keys and
// values are already in `cache`.
struct CachedQueries {
  const KvCache* cache = nullptr;
  int64_t first_row = 0, rows = 0, first_position = 0;
};

// A decode row's share of its visible keys: keys [first_key, first_key + keys) of row `row` of
// sequence `sequence`, every head.
struct KeyRangeTask {
  int64_t row = 0, sequence = 0, first_key = 0, keys = 0;
};

// Buffers attend_caches reuses across calls.
struct CachedAttentionScratch {
  std::vector<KeyRangeTask> tasks;               // decode rows' key ranges, each row's in key order
  std::vector<float> partial_accs;               // [tasks, heads*D]: each task's per-head accumulators
  std::vector<AttentionState> partial_states;    // [tasks, heads]
  std::vector<int64_t> row_starts;               // each decode row's first task, then the task count
  std::vector<float> keys, values;               // a half cache's visible rows widened to F32
};

/* out[d] = softmax attention from `count` states of disjoint key ranges (kernels.h AttentionState):
   state c at states[c * state_stride] with its accumulator at accs + c * acc_stride; with M the
   largest max, out = sum_c e^(max_c - M) acc_c / sum_c e^(max_c - M) sum_c, zeros when every
   state is empty. Merged in order c = 0, 1, ... */
void merge_attention_states(const AttentionState* states, int64_t state_stride, const float* accs, int64_t acc_stride,
                            int64_t count, int64_t d, float* out);

/* out[r, h*D:(h+1)*D] = softmax(q[r, h*D:(h+1)*D] . K^T / sqrt(D)) V over the cache slots row r
   sees at `layer` (KvCache::visible_slots), for every row of every sequence; q, out [rows, heads*D].
   A prompt's rows at whole blocks of kAttentionQueryBlock positions go through attention() at
   `precision` (a half cache's rows widened to F32 first); every other new row (a decode step, a
   prompt's first and last few) is split into ranges of a fixed number of keys, one task each,
   whatever the batch. So a row's result depends on its position alone, never on the rest of the
   batch or on how its prompt was split into calls at block boundaries:
   a task walks its range in short blocks of consecutive slots, folding each block into every head's
   state (the kernel set's attention_head, or attention_head_f16 reading a half cache in place), so
   the cache is read front to back; the ranges' states are then merged per head. */
void attend_caches(ThreadPool& pool, const KernelSet& kernels, const DecoderDims& dims, int64_t layer,
                   const std::vector<CachedQueries>& sequences, const float* q, float* out,
                   CachedAttentionScratch& scratch, Precision precision);

}  // namespace scriptorium
