#include "attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "decoder.h"

namespace scriptorium {

namespace {

constexpr int64_t kRowsPerTask = 24;  // attention query rows scored together (one K pass)

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

/* out[r, h*D:(h+1)*D] = softmax(q_r,h . K^T / sqrt(D)) V over the slots row r sees, every row */
void attend_caches(ThreadPool& pool, const KernelSet& kernels, const DecoderDims& dims, int64_t layer,
                   const std::vector<CachedQueries>& sequences, const float* q, float* out,
                   CachedAttentionScratch& scratch) {
  const int64_t D = dims.head_dim, QW = dims.heads * D, KW = dims.kv_heads * D;
  // New tokens of a sequence sit in consecutive slots equal to their positions (a window only
  // starts after the prefill), so query t of a run starting at `first` sees slots [0, first + t].
  constexpr int64_t kBlockedQueries = 16;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  std::vector<std::pair<int64_t, int64_t>>& single_rows = scratch.single_rows;
  single_rows.clear();
  for (int64_t s = 0; s < static_cast<int64_t>(sequences.size()); ++s) {
    const CachedQueries& run = sequences[s];
    if (run.rows < kBlockedQueries) {
      for (int64_t i = 0; i < run.rows; ++i) single_rows.emplace_back(run.first_row + i, s);
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
  const int64_t group = dims.heads / dims.kv_heads;
  pool.parallel_for(static_cast<int64_t>(single_rows.size()) * dims.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const auto [r, s] = single_rows[task / dims.heads];
      const int64_t h = task % dims.heads;
      const CachedQueries& run = sequences[s];
      const KvCache& cache = *run.cache;
      const int64_t kv_offset = (h / group) * D;
      const int64_t visible = cache.visible_slots(run.first_position + r - run.first_row);
      if (cache.dtype() == KvCacheDtype::F32)
        kernels.attention_head(q + r * QW + h * D, cache.keys_f32(layer) + kv_offset, cache.values_f32(layer) + kv_offset,
                               KW, visible, D, scale, out + r * QW + h * D);
      else
        kernels.attention_head_f16(q + r * QW + h * D, cache.keys_f16(layer) + kv_offset,
                                   cache.values_f16(layer) + kv_offset, KW, visible, D, scale, out + r * QW + h * D);
    }
  });
}

}  // namespace scriptorium
