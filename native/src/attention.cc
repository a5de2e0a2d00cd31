#include "attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "decoder.h"

namespace scriptorium {

namespace {

constexpr int64_t kRowsPerTask = 24;  // attention query rows scored together (one K pass)

// A decode row's keys per task: fixed, so that the ranges and the merge order depend on the row
// alone; long caches give several tasks per row even at batch 1.
constexpr int64_t kKeysPerTask = 256;
// Consecutive slots folded into every head before the next block: the task reads the cache one
// contiguous stretch (a block's key and value rows of all heads) at a time.
constexpr int64_t kKeysPerBlock = 32;

/* folds keys [first, first + count) of every head of one query row into states[heads], accs[heads*D] */
template <typename T, typename Fold>
void fold_key_range(const DecoderDims& dims, const float* q, const T* K, const T* V, int64_t first, int64_t count,
                    float scale, Fold fold, float* accs, AttentionState* states) {
  const int64_t D = dims.head_dim, KW = dims.kv_heads * D, group = dims.heads / dims.kv_heads;
  for (int64_t b0 = first; b0 < first + count; b0 += kKeysPerBlock) {
    const int64_t nb = std::min(kKeysPerBlock, first + count - b0);
    for (int64_t h = 0; h < dims.heads; ++h) {
      const int64_t kv = (h / group) * D;
      fold(q + h * D, K + b0 * KW + kv, V + b0 * KW + kv, KW, nb, D, scale, accs + h * D, states + h);
    }
  }
}

}  // namespace

/* out[b*queries+t, h*D:(h+1)*D] = softmax(scale * q.K^T + bias) V */
void attention(ThreadPool& pool, const AttentionTensors& t, const AttentionShape& s, const AttentionHooks& hooks) {
  if (s.batch <= 0 || s.queries <= 0 || s.keys <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.head_dim <= 0 ||
      s.heads % s.kv_heads != 0)
    throw std::invalid_argument("attention: sizes must be positive and heads a multiple of kv_heads");
  const int64_t D = s.head_dim, T = s.keys, KVH = s.kv_heads, group = s.heads / s.kv_heads;
  const KernelSet& kernels = active_kernels();

  // K^T per sequence and kv head, [batch*KVH, D, keys]: scores and P.V are then both k-major
  // products (gemm_nn_f32), with no horizontal sum per score.
  std::vector<float> kt(s.batch * KVH * D * T);
  pool.parallel_for(s.batch * KVH, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* k = t.k + (i / KVH) * T * t.ldk + (i % KVH) * D;
      float* dst = kt.data() + i * D * T;
      for (int64_t r = 0; r < T; ++r)
        for (int64_t d = 0; d < D; ++d) dst[d * T + r] = k[r * t.ldk + d];
    }
  });

  const int64_t blocks = (s.queries + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(s.batch * s.heads * blocks, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(kRowsPerTask * T), scratch(hooks.bias_scratch);
    int64_t visible[kRowsPerTask];
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t t0 = item % blocks * kRowsPerTask, h = item / blocks % s.heads, b = item / blocks / s.heads;
      const int64_t rows = std::min(kRowsPerTask, s.queries - t0), g = h / group;
      int64_t widest = 0;
      for (int64_t r = 0; r < rows; ++r) {
        visible[r] = hooks.visible_keys ? std::clamp<int64_t>(hooks.visible_keys(t0 + r), 1, T) : T;
        widest = std::max(widest, visible[r]);
      }
      const float* q = t.q + (b * s.queries + t0) * t.ldq + h * D;
      kernels.gemm_nn_f32(q, t.ldq, kt.data() + (b * KVH + g) * D * T, T, scores.data(), T, rows, 0, widest, D);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = scores.data() + r * T;
        for (int64_t j = 0; j < widest; ++j) row[j] *= s.scale;
        if (hooks.bias) hooks.bias(b, h, t0 + r, row, scratch.data());
        kernels.softmax(row, visible[r]);
        std::fill(row + visible[r], row + widest, 0.0f);
      }
      kernels.gemm_nn_f32(scores.data(), T, t.v + b * T * t.ldv + g * D, t.ldv, t.out + (b * s.queries + t0) * t.ldo + h * D,
                          t.ldo, rows, 0, D, widest);
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
                   CachedAttentionScratch& scratch) {
  const int64_t D = dims.head_dim, QW = dims.heads * D, KW = dims.kv_heads * D;
  // New tokens of a sequence sit in consecutive slots equal to their positions (a window only
  // starts after the prefill), so query t of a run starting at `first` sees slots [0, first + t].
  constexpr int64_t kBlockedQueries = 16;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  std::vector<KeyRangeTask>& tasks = scratch.tasks;
  tasks.clear();
  for (int64_t s = 0; s < static_cast<int64_t>(sequences.size()); ++s) {
    const CachedQueries& run = sequences[s];
    if (run.rows < kBlockedQueries) {
      for (int64_t i = 0; i < run.rows; ++i) {
        const int64_t visible = run.cache->visible_slots(run.first_position + i);
        for (int64_t k0 = 0; k0 < visible; k0 += kKeysPerTask)
          tasks.push_back({run.first_row + i, s, k0, std::min(kKeysPerTask, visible - k0)});
      }
      continue;
    }
    const int64_t first = run.first_position, keys = first + run.rows;
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
    const AttentionTensors tensors{q + run.first_row * QW, QW, k, KW, v, KW, out + run.first_row * QW, QW};
    AttentionHooks causal;
    causal.visible_keys = [first](int64_t t) { return first + t + 1; };
    attention(pool, tensors, AttentionShape{1, run.rows, keys, dims.heads, dims.kv_heads, D, scale}, causal);
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
