#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "cpu/cpu_decoder.h"

namespace scriptorium {

namespace {

constexpr int64_t kRowsPerTask = kAttentionQueryBlock;  // attention query rows scored together (one K pass)

// A decode row's keys per task: fixed, so that the ranges and the merge order depend on the row
// alone; long caches give several tasks per row even at batch 1.
constexpr int64_t kKeysPerTask = 256;
// Consecutive slots folded into every head before the next block: the task reads the cache one
// contiguous stretch (a block's key and value rows of all heads) at a time.
constexpr int64_t kKeysPerBlock = 32;

/* brings rows [0, n) of one kv head's keys and values (d values each, rows ld apart) towards the
   core: the next block's rows are far apart in memory, which the hardware prefetchers do not follow */
template <typename T>
void prefetch_head_rows(const T* K, const T* V, int64_t ld, int64_t n, int64_t d) {
  constexpr int64_t kLine = 64;
  const int64_t bytes = d * static_cast<int64_t>(sizeof(T));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t b = 0; b < bytes; b += kLine) {
      __builtin_prefetch(reinterpret_cast<const char*>(K + r * ld) + b);
      __builtin_prefetch(reinterpret_cast<const char*>(V + r * ld) + b);
    }
}

/* folds keys [first, first + count) of every head of one query row into states[heads], accs[heads*D] */
template <typename T, typename Fold>
void fold_key_range(const DecoderDims& dims, const float* q, const T* K, const T* V, int64_t first, int64_t count,
                    float scale, Fold fold, float* accs, AttentionState* states) {
  const int64_t D = dims.head_dim, KW = dims.kv_heads * D, group = dims.heads / dims.kv_heads;
  for (int64_t b0 = first; b0 < first + count; b0 += kKeysPerBlock) {
    const int64_t nb = std::min(kKeysPerBlock, first + count - b0);
    const int64_t next = std::min(kKeysPerBlock, first + count - b0 - nb);
    for (int64_t h = 0; h < dims.heads; ++h) {
      const int64_t kv = (h / group) * D;
      if (next > 0 && h % group == 0) prefetch_head_rows(K + (b0 + nb) * KW + kv, V + (b0 + nb) * KW + kv, KW, next, D);
      fold(q + h * D, K + b0 * KW + kv, V + b0 * KW + kv, KW, nb, D, scale, accs + h * D, states + h);
    }
  }
}

// The right operands of both products, laid out once per call for every sequence b and kv head g
// (i = b * kv_heads + g). F32: K^T [D, keys] per i, and V read in place. BF16 (fast precision with
// BF16 dot products): K^T and V rounded to BF16 in pairs of k (KernelSet::gemm_nn_bf16), an odd
// count's unpaired value zero.
struct AttentionOperands {
  LargeBuffer<float> kt;           // [batch*KVH, D, keys]
  LargeBuffer<bf16_t> k_pairs;     // [batch*KVH, ceil(D/2), keys, 2]
  LargeBuffer<bf16_t> v_pairs;     // [batch*KVH, ceil(keys/2), D, 2]
  int64_t k_pairs_size = 0, v_pairs_size = 0;  // elements per i
};

/* dst[n] = bf16(src[n]), nearest even */
void round_to_bf16(const float* src, bf16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

AttentionOperands pack_operands(ThreadPool& pool, const AttentionTensors& t, const AttentionShape& s, bool bf16) {
  const int64_t D = s.head_dim, T = s.keys, KVH = s.kv_heads;
  AttentionOperands ops;
  if (bf16) {
    ops.k_pairs_size = (D + 1) / 2 * 2 * T;
    ops.v_pairs_size = (T + 1) / 2 * 2 * D;
    ops.k_pairs.resize(s.batch * KVH * ops.k_pairs_size);
    ops.v_pairs.resize(s.batch * KVH * ops.v_pairs_size);
  } else {
    ops.kt.resize(s.batch * KVH * D * T);
  }
  // K^T and V are both k-major, so scores and P.V are both gemm_nn products, with no horizontal sum
  // per score.
  pool.parallel_for(s.batch * KVH, 1, [&](int64_t i0, int64_t i1) {
    std::vector<bf16_t> first(bf16 ? D + 1 : 0, 0), second(bf16 ? D : 0, 0);
    for (int64_t i = i0; i < i1; ++i) {
      const float* k = t.k + (i / KVH) * T * t.ldk + (i % KVH) * D;
      if (!bf16) {
        float* dst = ops.kt.data() + i * D * T;
        for (int64_t r = 0; r < T; ++r)
          for (int64_t d = 0; d < D; ++d) dst[d * T + r] = k[r * t.ldk + d];
        continue;
      }
      // Key r rounded is a row of pairs (d = 2p, 2p + 1): pair p is column r of K^T's pair row p.
      bf16_t* kp = ops.k_pairs.data() + i * ops.k_pairs_size;
      const int64_t pairs = (D + 1) / 2, ldk = t.ldk;
      bf16_t* key = first.data();  // held in locals, which the word stores below cannot alias
      for (int64_t r = 0; r < T; ++r) {
        round_to_bf16(k + r * ldk, key, D);
        for (int64_t p = 0; p < pairs; ++p) std::memcpy(kp + p * 2 * T + 2 * r, key + 2 * p, 4);
      }
      // Values r and r + 1 (zero past the last) interleaved make pair row r / 2.
      const float* v = t.v + (i / KVH) * T * t.ldv + (i % KVH) * D;
      bf16_t* vp = ops.v_pairs.data() + i * ops.v_pairs_size;
      for (int64_t r = 0; r < T; r += 2) {
        round_to_bf16(v + r * t.ldv, first.data(), D);
        if (r + 1 < T) round_to_bf16(v + (r + 1) * t.ldv, second.data(), D);
        else std::fill(second.begin(), second.end(), bf16_t{0});
        bf16_t* pair_row = vp + r / 2 * 2 * D;
        for (int64_t d = 0; d < D; ++d) {
          pair_row[2 * d] = first[d];
          pair_row[2 * d + 1] = second[d];
        }
      }
    }
  });
  return ops;
}

}  // namespace

/* out[b*queries+t, h*D:(h+1)*D] = softmax(scale * q.K^T + bias) V */
void attention(ThreadPool& pool, const AttentionTensors& t, const AttentionShape& s, Precision precision,
               const AttentionHooks& hooks) {
  if (s.batch <= 0 || s.queries <= 0 || s.keys <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.head_dim <= 0 ||
      s.heads % s.kv_heads != 0)
    throw std::invalid_argument("attention: sizes must be positive and heads a multiple of kv_heads");
  const int64_t D = s.head_dim, T = s.keys, KVH = s.kv_heads, group = s.heads / s.kv_heads;
  const KernelSet& kernels = active_kernels();
  const bool bf16 = precision == Precision::Fast && kernels.gemm_nn_bf16 != nullptr;
  const AttentionOperands ops = pack_operands(pool, t, s, bf16);

  const int64_t blocks = (s.queries + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(s.batch * s.heads * blocks, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(kRowsPerTask * T), scratch(hooks.bias_scratch);
    int64_t visible[kRowsPerTask];
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t t0 = item % blocks * kRowsPerTask, h = item / blocks % s.heads, b = item / blocks / s.heads;
      const int64_t rows = std::min(kRowsPerTask, s.queries - t0), i = b * KVH + h / group;
      int64_t widest = 0;
      for (int64_t r = 0; r < rows; ++r) {
        visible[r] = hooks.visible_keys ? std::clamp<int64_t>(hooks.visible_keys(t0 + r), 1, T) : T;
        widest = std::max(widest, visible[r]);
      }
      const float* q = t.q + (b * s.queries + t0) * t.ldq + h * D;
      float* out = t.out + (b * s.queries + t0) * t.ldo + h * D;
      if (bf16)
        kernels.gemm_nn_bf16(q, t.ldq, ops.k_pairs.data() + i * ops.k_pairs_size, 2 * T, scores.data(), T, rows, 0,
                             widest, D);
      else
        kernels.gemm_nn_f32(q, t.ldq, ops.kt.data() + i * D * T, T, scores.data(), T, rows, 0, widest, D);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = scores.data() + r * T;
        for (int64_t j = 0; j < widest; ++j) row[j] *= s.scale;
        if (hooks.bias) hooks.bias(b, h, t0 + r, row, scratch.data());
        kernels.softmax(row, visible[r]);
        std::fill(row + visible[r], row + widest, 0.0f);
      }
      if (bf16)
        kernels.gemm_nn_bf16(scores.data(), T, ops.v_pairs.data() + i * ops.v_pairs_size, 2 * D, out, t.ldo, rows, 0,
                             D, widest);
      else
        kernels.gemm_nn_f32(scores.data(), T, t.v + b * T * t.ldv + (h / group) * D, t.ldv, out, t.ldo, rows, 0, D,
                            widest);
    }
  });
}

/* out[d] = merge of `count` disjoint key ranges' states, in order */
void merge_attention_states(const AttentionState* states, int64_t state_stride, const float* accs, int64_t acc_stride,
                            int64_t count, int64_t d, float* out) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float mx = kNegInf;
  for (int64_t c = 0; c < count; ++c) mx = std::max(mx, states[c * state_stride].max);
  std::fill(out, out + d, 0.0f);
  if (mx == kNegInf) return;  // no state saw a finite score
  float sum = 0.0f;
  for (int64_t c = 0; c < count; ++c) {
    const AttentionState& state = states[c * state_stride];
    if (state.max == kNegInf) continue;
    const float w = std::exp(state.max - mx);
    sum += w * state.sum;
    const float* acc = accs + c * acc_stride;
    for (int64_t i = 0; i < d; ++i) out[i] += w * acc[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < d; ++i) out[i] *= inv;
}

/* out[r, h*D:(h+1)*D] = softmax(q_r,h . K^T / sqrt(D)) V over the slots row r sees, every row */
void attend_caches(ThreadPool& pool, const KernelSet& kernels, const DecoderDims& dims, int64_t layer,
                   const std::vector<CachedQueries>& sequences, const float* q, float* out,
                   CachedAttentionScratch& scratch, Precision precision) {
  const int64_t D = dims.head_dim, QW = dims.heads * D, KW = dims.kv_heads * D;
  // New tokens of a sequence sit in consecutive slots equal to their positions (a window only
  // starts after the prompt), so query t of a run starting at `first` sees slots [0, first + t].
  // The run's prompt rows at whole blocks of kAttentionQueryBlock positions (counted from position
  // 0) attend together, block by block; the rows before and after them one by one, as do rows past
  // the prompt (generated tokens read again after a preemption, with full attention). So every
  // row's result depends on its position alone, not on how the prompt was split into calls, and a
  // generated token read again attends as its decode step did.
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  std::vector<KeyRangeTask>& tasks = scratch.tasks;
  tasks.clear();
  for (int64_t s = 0; s < static_cast<int64_t>(sequences.size()); ++s) {
    const CachedQueries& run = sequences[s];
    const int64_t first = run.first_position, end = first + run.rows;
    const int64_t block_begin = std::min(end, (first + kAttentionQueryBlock - 1) / kAttentionQueryBlock * kAttentionQueryBlock);
    const int64_t prompt_end = std::min(end, run.cache->prefix_length());
    const int64_t block_end = std::max(block_begin, prompt_end / kAttentionQueryBlock * kAttentionQueryBlock);
    for (int64_t pos = first; pos < end; ++pos) {
      if (pos == block_begin) pos = block_end;
      if (pos == end) break;
      const int64_t visible = run.cache->visible_slots(pos);
      for (int64_t k0 = 0; k0 < visible; k0 += kKeysPerTask)
        tasks.push_back({run.first_row + pos - first, s, k0, std::min(kKeysPerTask, visible - k0)});
    }
    if (block_begin == block_end) continue;
    const int64_t keys = block_end;
    const float* k = nullptr;
    const float* v = nullptr;
    if (run.cache->dtype() == KvCacheDtype::F32) {
      k = run.cache->keys_f32(layer);
      v = run.cache->values_f32(layer);
    } else {
      scratch.keys.resize(keys * KW);
      scratch.values.resize(keys * KW);
      const f16_t* k16 = run.cache->keys_f16(layer);
      const f16_t* v16 = run.cache->values_f16(layer);
      pool.parallel_for(keys, 64, [&](int64_t r0, int64_t r1) {
        kernels.from_f16(k16 + r0 * KW, scratch.keys.data() + r0 * KW, (r1 - r0) * KW);
        kernels.from_f16(v16 + r0 * KW, scratch.values.data() + r0 * KW, (r1 - r0) * KW);
      });
      k = scratch.keys.data();
      v = scratch.values.data();
    }
    const int64_t row = run.first_row + block_begin - first;
    const AttentionTensors tensors{q + row * QW, QW, k, KW, v, KW, out + row * QW, QW};
    AttentionHooks causal;
    causal.visible_keys = [block_begin](int64_t t) { return block_begin + t + 1; };
    attention(pool, tensors, AttentionShape{1, block_end - block_begin, keys, dims.heads, dims.kv_heads, D, scale},
              precision, causal);
  }
  const int64_t task_count = static_cast<int64_t>(tasks.size());
  if (task_count == 0) return;
  scratch.partial_accs.resize(task_count * QW);
  scratch.partial_states.resize(task_count * dims.heads);
  pool.parallel_for(task_count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const KeyRangeTask& task = tasks[t];
      const KvCache& cache = *sequences[task.sequence].cache;
      float* accs = scratch.partial_accs.data() + t * QW;
      AttentionState* states = scratch.partial_states.data() + t * dims.heads;
      std::fill(accs, accs + QW, 0.0f);
      std::fill(states, states + dims.heads, AttentionState{});
      const float* qrow = q + task.row * QW;
      if (cache.dtype() == KvCacheDtype::F32)
        fold_key_range(dims, qrow, cache.keys_f32(layer), cache.values_f32(layer), task.first_key, task.keys, scale,
                       kernels.attention_head, accs, states);
      else
        fold_key_range(dims, qrow, cache.keys_f16(layer), cache.values_f16(layer), task.first_key, task.keys, scale,
                       kernels.attention_head_f16, accs, states);
    }
  });
  // A row's tasks are consecutive, in key order: merge them per head.
  std::vector<int64_t>& row_starts = scratch.row_starts;
  row_starts.clear();
  for (int64_t t = 0; t < task_count; ++t)
    if (t == 0 || tasks[t].row != tasks[t - 1].row) row_starts.push_back(t);
  row_starts.push_back(task_count);
  const int64_t rows = static_cast<int64_t>(row_starts.size()) - 1;
  pool.parallel_for(rows * dims.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / dims.heads, h = item % dims.heads, first = row_starts[i];
      merge_attention_states(scratch.partial_states.data() + first * dims.heads + h, dims.heads,
                             scratch.partial_accs.data() + first * QW + h * D, QW, row_starts[i + 1] - first, D,
                             out + tasks[first].row * QW + h * D);
    }
  });
}

}  // namespace scriptorium
