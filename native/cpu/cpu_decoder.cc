#include "cpu/cpu_decoder.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "cpu/log_sum_exp.h"
#include "cpu/ops.h"
#include "cpu/packed_weights_file.h"

namespace scriptorium {

namespace {

void grow(std::vector<float>& buffer, int64_t n) {
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(n);
}

/* a buffer of `blocks` equal blocks (a layer's keys or values) regrown from `kept` to `size` values
   a block, each block's first `kept` values copied over */
template <typename T>
void regrow_blocks(LargeBuffer<T>& buffer, int64_t blocks, int64_t kept, int64_t size) {
  LargeBuffer<T> grown(blocks * size);
  for (int64_t b = 0; b < blocks && kept > 0; ++b) std::copy_n(buffer.data() + b * kept, kept, grown.data() + b * size);
  buffer = std::move(grown);
}

}  // namespace

KvCache::KvCache(const DecoderDims& dims, KvCacheDtype dtype)
    : dims_(dims), dtype_(dtype), rules_(dims), row_width_(dims.kv_heads * dims.head_dim) {}

size_t KvCache::bytes() const {
  const size_t element = dtype_ == KvCacheDtype::F32 ? sizeof(float) : sizeof(f16_t);
  return 2 * static_cast<size_t>(dims_.layers * capacity_rows_ * row_width_) * element;
}

void KvCache::reserve_rows(int64_t rows) {
  if (rows <= capacity_rows_) return;
  const int64_t target = rules_.grown_capacity(rows, capacity_rows_);
  const int64_t kept = capacity_rows_ * row_width_, n = target * row_width_;
  if (dtype_ == KvCacheDtype::F32) regrow_blocks(rows32_, 2 * dims_.layers, kept, n);
  else regrow_blocks(rows16_, 2 * dims_.layers, kept, n);
  capacity_rows_ = target;
}

void KvCache::store(const KernelSet& kernels, int64_t layer, int64_t slot, const float* key, const float* value) {
  const int64_t k = block_offset(layer, 0) + slot * row_width_, v = block_offset(layer, 1) + slot * row_width_;
  if (dtype_ == KvCacheDtype::F32) {
    std::copy_n(key, row_width_, rows32_.data() + k);
    std::copy_n(value, row_width_, rows32_.data() + v);
  } else {
    kernels.to_f16(key, rows16_.data() + k, row_width_);
    kernels.to_f16(value, rows16_.data() + v, row_width_);
  }
}

Decoder::Decoder(const Checkpoint& checkpoint, const DecoderDims& dims, ThreadPool& pool, Precision precision,
                 WeightQuantization quantization, const std::string& packed_weights_dir)
    : dims_(dims), pool_(pool), precision_(precision), kernels_(active_kernels()) {
  dims_.validate();
  auto bf16 = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return Bf16Weight{reinterpret_cast<const bf16_t*>(checkpoint.get(name, shape).data), {}};
  };
  auto f32 = [&](const std::string& name, const std::vector<int64_t>& shape) { return checkpoint.f32(name, shape); };
  auto weights = load_decoder_weights<Bf16Weight, std::vector<float>>(dims_, bf16, f32);
  embed_ = weights.embed.rows;
  final_norm_ = weights.final_norm.rows;
  lm_head_ = std::move(weights.lm_head);
  layers_ = std::move(weights.layers);
  const bool int8 = quantization == WeightQuantization::Int8;
  if (int8) quantize_int8_weights(checkpoint);
  pack_weights(checkpoint, !int8, packed_weights_dir);
  measure_head_norms();
}

void Decoder::pack_weights(const Checkpoint& checkpoint, bool bf16_experts, const std::string& packed_weights_dir) {
  if (!active_kernels().gemm_bf16_packed) return;
  const int64_t H = dims_.hidden, QW = dims_.heads * dims_.head_dim, KW = dims_.kv_heads * dims_.head_dim;
  struct Request {
    Bf16Weight* weight;
    int64_t N, K;
  };
  std::vector<Request> requests;
  auto mlp = [&](Expert& m) {
    requests.push_back({&m.gate, m.width, H});
    requests.push_back({&m.up, m.width, H});
    requests.push_back({&m.down, H, m.width});
  };
  for (Layer& layer : layers_) {
    requests.push_back({&layer.wq, QW, H});
    requests.push_back({&layer.wk, KW, H});
    requests.push_back({&layer.wv, KW, H});
    requests.push_back({&layer.wo, H, QW});
    if (!layer.moe) mlp(layer.dense);
    if (!layer.moe || !bf16_experts) continue;
    // Packed weights lie in memory in this order (in the node's file, or in this process's slabs).
    // A step reads the gate and up of the experts its batch chose, then their downs: all gates and
    // ups first, then all downs, keeps each of those reads within one stretch of memory (with each
    // expert's three side by side, it streamed about 12% slower).
    for (Expert& e : layer.experts) {
      requests.push_back({&e.gate, e.width, H});
      requests.push_back({&e.up, e.width, H});
    }
    for (Expert& e : layer.experts) requests.push_back({&e.down, H, e.width});
    if (dims_.n_shared > 0) mlp(layer.shared);
  }
  if (bf16_experts) requests.push_back({&lm_head_, dims_.vocab, H});
  if (packed_weights_dir.empty()) {
    // Placed in order first, then packed in parallel.
    std::vector<std::shared_ptr<const bf16_t>> storage;
    for (const Request& r : requests) storage.push_back(std::static_pointer_cast<const bf16_t>(place_on_slabs(PackedBf16::bytes(r.N, r.K))));
    pool_.parallel_for(static_cast<int64_t>(requests.size()), 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) pack_weight(checkpoint, *requests[i].weight, requests[i].N, requests[i].K, std::move(storage[i]));
    });
    return;
  }
  // Everything the packed bytes depend on: the layout, which weights (their order and sizes are
  // checked by the file as well), and which files, at which version, they came from.
  const std::string key = std::string("decoder weights packed for ") + active_kernels().name + ", panels of " +
                          std::to_string(kPanelColumns) +
                          (bf16_experts ? ", experts packed, gates and ups before downs" : ", experts int8") + "\n" +
                          checkpoint.fingerprint();
  std::vector<size_t> sizes;
  for (const Request& r : requests) sizes.push_back(PackedBf16::bytes(r.N, r.K));
  PackedWeightsFile file(packed_weights_dir, key, sizes);
  pool_.parallel_for(static_cast<int64_t>(requests.size()), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const Request& r = requests[i];
      auto slot = std::static_pointer_cast<const bf16_t>(file.slot(static_cast<size_t>(i)));
      if (file.filled()) {
        r.weight->packed = PackedBf16(std::move(slot));  // the checkpoint's rows are never read
      } else {
        pack_weight(checkpoint, *r.weight, r.N, r.K, std::move(slot));
      }
    }
  });
  if (!file.filled()) file.finish();
}

void Decoder::quantize_int8_weights(const Checkpoint& checkpoint) {
  const int64_t H = dims_.hidden;
  auto convert = [&](const bf16_t* W, int64_t rows, int64_t cols) {
    Int8Matrix q = quantize_int8(pool_, W, rows, cols, std::min(cols, kInt8Group), active_quant_kernels().layout);
    checkpoint.release_mapped(W, static_cast<size_t>(rows * cols) * sizeof(bf16_t));
    return q;
  };
  auto expert = [&](const Expert& e, int64_t width) {
    return Int8Expert{convert(e.gate.rows, width, H), convert(e.up.rows, width, H), convert(e.down.rows, H, width)};
  };
  int8_layers_.resize(dims_.layers);
  for (int64_t l = 0; l < dims_.layers; ++l) {
    if (!layers_[l].moe) continue;
    // Converted, and so placed, in the order pack_weights gives BF16 experts: gates and ups, then downs.
    std::vector<Int8Expert>& experts = int8_layers_[l].experts;
    for (const Expert& e : layers_[l].experts) experts.push_back({convert(e.gate.rows, dims_.moe_intermediate, H), convert(e.up.rows, dims_.moe_intermediate, H), {}});
    for (size_t i = 0; i < experts.size(); ++i) experts[i].down = convert(layers_[l].experts[i].down.rows, H, dims_.moe_intermediate);
    if (dims_.n_shared > 0) int8_layers_[l].shared = expert(layers_[l].shared, dims_.n_shared * dims_.moe_intermediate);
  }
  int8_head_ = convert(lm_head_.rows, dims_.vocab, H);
}

size_t Decoder::quantized_bytes() const {
  size_t total = int8_head_.bytes();
  for (const Int8Layer& layer : int8_layers_) {
    for (const Int8Expert& e : layer.experts) total += e.gate.bytes() + e.up.bytes() + e.down.bytes();
    total += layer.shared.gate.bytes() + layer.shared.up.bytes() + layer.shared.down.bytes();
  }
  return total;
}

void Decoder::forward(std::vector<ForwardEntry>& entries, float* logits, int32_t* best, float* logprob) {
  const int64_t H = dims_.hidden;
  // Validate everything before touching any cache.
  std::set<const KvCache*> seen;
  int64_t rows = 0;
  for (const ForwardEntry& entry : entries) {
    if (!entry.cache) throw std::invalid_argument("forward: entry without a sequence");
    if (!seen.insert(entry.cache).second) throw std::invalid_argument("forward: a sequence appears twice in one batch");
    check_forward_entry(dims_, entry, entry.cache->rules_);
    rows += static_cast<int64_t>(entry.ids.size());
  }

  const int64_t QW = dims_.heads * dims_.head_dim, KW = dims_.kv_heads * dims_.head_dim;
  grow(x_, rows * H);
  grow(norm_, rows * H);
  grow(proj_, rows * H);
  grow(q_, rows * QW);
  grow(attn_, rows * QW);
  grow(k_, rows * KW);
  grow(v_, rows * KW);
  grow(router_logits_, rows * std::max<int64_t>(dims_.n_routed, 1));
  grow(last_rows_, static_cast<int64_t>(entries.size()) * H);
  row_pos_.resize(rows);
  row_entry_.resize(rows);
  queries_.clear();

  int64_t r = 0;
  for (size_t b = 0; b < entries.size(); ++b) {
    ForwardEntry& entry = entries[b];
    KvCache& cache = *entry.cache;
    const int64_t n = static_cast<int64_t>(entry.ids.size());
    cache.reserve_rows(cache.rules_.begin_append(n, entry.prompt_tokens));
    queries_.push_back({&cache, r, n, cache.length()});
    for (int64_t i = 0; i < n; ++i, ++r) {
      row_pos_[r] = cache.length() + i;
      row_entry_[r] = static_cast<int64_t>(b);
      const bf16_t* src = embed_ + static_cast<int64_t>(entry.ids[i]) * H;
      for (int64_t j = 0; j < H; ++j) x_[r * H + j] = bf16_to_f32(src[j]);
    }
    for (size_t e = 0; e < entry.embed_rows.size(); ++e)
      std::copy_n(entry.embeds.data() + e * H, H, x_.data() + (r - n + entry.embed_rows[e]) * H);
  }

  for (int64_t l = 0; l < dims_.layers; ++l) {
    const Layer& layer = layers_[l];
    for (int64_t i = 0; i < rows; ++i)
      kernels_.rmsnorm(x_.data() + i * H, layer.input_norm.rows, norm_.data() + i * H, H, dims_.rms_eps);
    attention(l, entries, rows);
    kernels_.axpy(x_.data(), 1.f, proj_.data(), rows * H);
    for (int64_t i = 0; i < rows; ++i)
      kernels_.rmsnorm(x_.data() + i * H, layer.post_norm.rows, norm_.data() + i * H, H, dims_.rms_eps);
    feed_forward(layer, rows);
  }
  for (ForwardEntry& entry : entries) entry.cache->rules_.end_append(static_cast<int64_t>(entry.ids.size()));

  // Only each sequence's last token needs logits.
  int64_t end = 0;
  for (size_t b = 0; b < entries.size(); ++b) {
    end += static_cast<int64_t>(entries[b].ids.size());
    kernels_.rmsnorm(x_.data() + (end - 1) * H, final_norm_, last_rows_.data() + b * H, H, dims_.rms_eps);
  }
  head(entries, logits, best, logprob);
}

namespace {
constexpr int64_t kHeadChunk = 1024;  // vocabulary rows per task: 4 KB of logits per sequence
static_assert(kHeadChunk % kPanelColumns == 0, "a chunk of the packed head starts on a panel");
}  // namespace

void Decoder::measure_head_norms() {
  if (precision_ != Precision::Fast || int8_head_.rows > 0 || lm_head_.packed.empty() || !kernels_.gemm_bf16_packed_fast)
    return;
  const int64_t V = dims_.vocab, H = dims_.hidden, pairs = (H + 1) / 2;
  const int64_t chunks = (V + kHeadChunk - 1) / kHeadChunk, panel = pairs * 2 * kPanelColumns;
  // Read from the packed panels (the checkpoint's rows may never have been read): column c of a
  // panel is head row 64 j + c, its values at p * 128 + 2c and + 1 for each pair p.
  head_chunk_norms_.assign(chunks, 0.f);
  pool_.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double largest = 0;
      for (int64_t n = c * kHeadChunk; n < std::min(V, (c + 1) * kHeadChunk); n += kPanelColumns) {
        const bf16_t* w = lm_head_.packed.data() + n / kPanelColumns * panel;
        double squares[kPanelColumns] = {};
        for (int64_t p = 0; p < pairs; ++p)
          for (int64_t j = 0; j < 2 * kPanelColumns; ++j) {
            const double v = bf16_to_f32(w[p * 2 * kPanelColumns + j]);
            squares[j / 2] += v * v;
          }
        for (double sq : squares) largest = std::max(largest, sq);
      }
      head_chunk_norms_[c] = static_cast<float>(std::sqrt(largest) * (1 + 1e-6));
    }
  });
  // One BF16 rounding of x moves each term by at most 2^-8 |x_k w_k|; the exact products' second
  // part leaves 2^-16; F32 accumulation of at most 2H terms each way, under 4H 2^-24 more. The sum
  // of |x_k w_k| is at most |x| |w| (Cauchy-Schwarz).
  head_error_ = 0x1p-8 + 0x1p-16 + 4.0 * static_cast<double>(H) * 0x1p-24;
}

Decoder::ChunkHead Decoder::head_chunk(int64_t c, int64_t b, const std::vector<ForwardEntry>& entries,
                                       const float* y) const {
  const int64_t n0 = c * kHeadChunk, width = std::min(kHeadChunk, dims_.vocab - n0);
  const std::vector<int32_t>& banned = entries[b].banned;
  const auto is_banned = [&](int64_t j) { return std::binary_search(banned.begin(), banned.end(), static_cast<int32_t>(n0 + j)); };
  int64_t pick = kernels_.argmax(y, width);
  // The log-sum-exp takes every id, banned or not: the probability is the model's.
  const float chunk_max = y[pick];
  const float chunk_sum = chunk_max == -INFINITY ? 0.f : kernels_.sum_exp(y, width, chunk_max);
  if (is_banned(pick)) {  // rare: scan the chunk past its banned ids
    pick = -1;
    for (int64_t j = 0; j < width; ++j)
      if (!is_banned(j) && (pick < 0 || y[j] > y[pick])) pick = j;
  }
  // A chunk whose ids are all banned records its first logit: when every id is banned, best is 0
  // and chunk 0's first logit is id 0's.
  return {pick < 0 ? y[0] : y[pick], pick < 0 ? -1 : static_cast<int32_t>(n0 + pick), chunk_max, chunk_sum};
}

void Decoder::head(std::vector<ForwardEntry>& entries, float* logits, int32_t* best, float* logprob) {
  const int64_t B = static_cast<int64_t>(entries.size()), V = dims_.vocab, H = dims_.hidden;
  const int64_t chunks = (V + kHeadChunk - 1) / kHeadChunk;
  logits_row_.resize(B);
  int64_t rows = 0;
  for (int64_t b = 0; b < B; ++b) {
    logits_row_[b] = entries[b].want_logits ? rows++ : -1;
    std::sort(entries[b].banned.begin(), entries[b].banned.end());
  }
  // Returned logits are the exact products', so a call that returns any runs the exact head.
  const bool fast = !head_chunk_norms_.empty() && rows == 0;
  chunk_head_.resize(chunks * B);
  if (fast) head_panel_max_.resize((V + kPanelColumns - 1) / kPanelColumns * B);
  pool_.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    thread_local std::vector<float> y;
    if (static_cast<int64_t>(y.size()) < B * kHeadChunk) y.resize(B * kHeadChunk);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t n0 = c * kHeadChunk, width = std::min(kHeadChunk, V - n0);
      if (int8_head_.rows > 0) {
        active_quant_kernels().gemm_int8(last_rows_.data(), H, int8_head_.view().rows_from(n0), y.data(), kHeadChunk, B, 0, width);
      } else if (lm_head_.packed.empty()) {
        kernels_.gemm_bf16(last_rows_.data(), H, lm_head_.rows + n0 * H, y.data(), kHeadChunk, B, 0, width, H);
      } else {  // the chunk's first panel: kPanelColumns rows of H values rounded up to pairs each
        const bf16_t* panels = lm_head_.packed.data() + n0 * ((H + 1) / 2 * 2);
        (fast ? kernels_.gemm_bf16_packed_fast : kernels_.gemm_bf16_packed)(last_rows_.data(), H, panels, y.data(),
                                                                           kHeadChunk, B, 0, width, H);
      }
      for (int64_t b = 0; b < B; ++b) {
        const float* row = y.data() + b * kHeadChunk;
        if (logits_row_[b] >= 0) std::copy_n(row, width, logits + logits_row_[b] * V + n0);
        chunk_head_[c * B + b] = head_chunk(c, b, entries, row);
        if (!fast) continue;
        for (int64_t j = 0; j < width; j += kPanelColumns) {
          const float* panel = row + j;
          head_panel_max_[(n0 + j) / kPanelColumns * B + b] = panel[kernels_.argmax(panel, std::min(kPanelColumns, width - j))];
        }
      }
    }
  });
  if (fast) recheck_head_exactly(entries);
  for (int64_t b = 0; b < B; ++b) {
    int32_t id = -1;
    float value = chunk_head_[b].value;
    LogSumExp lse;
    for (int64_t c = 0; c < chunks; ++c) {  // in id order: an earlier chunk keeps a tie
      const ChunkHead& chunk = chunk_head_[c * B + b];
      if (!fast && chunk.id >= 0 && (id < 0 || chunk.value > value)) value = chunk.value, id = chunk.id;
      lse.fold(chunk.max, chunk.sum_exp);
    }
    if (fast) value = head_best_[b].value, id = head_best_[b].id;
    best[b] = id < 0 ? 0 : id;
    logprob[b] = static_cast<float>(static_cast<double>(value) - lse.value());
  }
}

// The exact best id v* of a row lies in a panel whose fast largest logit is within two error
// bounds of the row's highest lower bound L (a chunk's fast best not banned, minus its bound, the
// largest over the chunks): exact(v*) >= exact(u) >= L for u that best, and fast(v*) + bound >=
// exact(v*). Every other panel's exact logits are below L, so the panels kept and computed exactly
// give the exact head's id, ties included.
void Decoder::recheck_head_exactly(const std::vector<ForwardEntry>& entries) {
  const int64_t B = static_cast<int64_t>(entries.size()), V = dims_.vocab, H = dims_.hidden;
  const int64_t chunks = static_cast<int64_t>(head_chunk_norms_.size()), panels = (V + kPanelColumns - 1) / kPanelColumns;
  constexpr double kFlushed = 0x1p-100;  // far above what flushing subnormals to zero can move
  recheck_.clear();
  for (int64_t b = 0; b < B; ++b) {
    const float* x = last_rows_.data() + b * H;
    double squares = 0;
    for (int64_t k = 0; k < H; ++k) squares += static_cast<double>(x[k]) * x[k];
    const double scale = head_error_ * std::sqrt(squares) * (1 + 1e-6);
    const auto bound = [&](int64_t c) { return scale * head_chunk_norms_[c] + kFlushed; };
    double lower = -INFINITY;
    for (int64_t c = 0; c < chunks; ++c) {
      const ChunkHead& chunk = chunk_head_[c * B + b];
      if (chunk.id >= 0) lower = std::max(lower, chunk.value - bound(c));
    }
    if (lower == -INFINITY) {  // every id banned: the result is the exact logit of id 0
      recheck_.push_back({0, b});
      continue;
    }
    for (int64_t p = 0; p < panels; ++p)
      if (head_panel_max_[p * B + b] + bound(p * kPanelColumns / kHeadChunk) >= lower) recheck_.push_back({p, b});
  }
  pool_.parallel_for(static_cast<int64_t>(recheck_.size()), 1, [&](int64_t i0, int64_t i1) {
    float y[kPanelColumns];
    for (int64_t i = i0; i < i1; ++i) {
      Recheck& item = recheck_[i];
      const int64_t n0 = item.panel * kPanelColumns, width = std::min(kPanelColumns, V - n0);
      kernels_.gemm_bf16_packed(last_rows_.data() + item.row * H, H, lm_head_.packed.data() + n0 * ((H + 1) / 2 * 2), y,
                                kPanelColumns, 1, 0, width, H);
      const std::vector<int32_t>& banned = entries[item.row].banned;
      item.best = {y[0], -1};
      for (int64_t j = 0; j < width; ++j)
        if (!std::binary_search(banned.begin(), banned.end(), static_cast<int32_t>(n0 + j)) &&
            (item.best.id < 0 || y[j] > item.best.value))
          item.best = {y[j], static_cast<int32_t>(n0 + j)};
    }
  });
  // Each row's panels in id order: an earlier panel keeps a tie. With every id banned, the one
  // panel's first logit stands, as in the exact head.
  head_best_.assign(B, {0.f, -1});
  std::vector<bool> seen(B, false);
  for (const Recheck& item : recheck_) {
    HeadBest& best = head_best_[item.row];
    if (!seen[item.row] || (item.best.id >= 0 && (best.id < 0 || item.best.value > best.value))) best = item.best;
    seen[item.row] = true;
  }
}

void Decoder::attention(int64_t l, std::vector<ForwardEntry>& entries, int64_t rows) {
  const Layer& layer = layers_[l];
  const int64_t H = dims_.hidden, D = dims_.head_dim;
  const int64_t QW = dims_.heads * D, KW = dims_.kv_heads * D;
  products_.assign({{norm_.data(), &layer.wq, q_.data(), rows, QW, H},
                    {norm_.data(), &layer.wk, k_.data(), rows, KW, H},
                    {norm_.data(), &layer.wv, v_.data(), rows, KW, H}});
  matmul_bf16_group(pool_, products_, precision_);

  // Rotate and store every new key before any query attends: within a call, later rows of the
  // same sequence are only visible to later queries through visible_slots().
  for (int64_t r = 0; r < rows; ++r) {
    KvCache& cache = *entries[row_entry_[r]].cache;
    rope_rotate_half(q_.data() + r * QW, dims_.heads, D, row_pos_[r], dims_.rope_theta);
    rope_rotate_half(k_.data() + r * KW, dims_.kv_heads, D, row_pos_[r], dims_.rope_theta);
    cache.store(kernels_, l, cache.rules_.slot_of(row_pos_[r]), k_.data() + r * KW, v_.data() + r * KW);
  }

  attend_caches(pool_, kernels_, dims_, l, queries_, q_.data(), attn_.data(), attention_scratch_, precision_);
  matmul_bf16(pool_, attn_.data(), layer.wo, proj_.data(), rows, H, QW, precision_);
}

void Decoder::feed_forward(const Layer& layer, int64_t rows) {
  const int64_t H = dims_.hidden, E = dims_.n_routed;
  tasks_.clear();
  all_rows_.clear();
  for (int64_t r = 0; r < rows; ++r) all_rows_.emplace_back(r, 1.f);
  if (!layer.moe) {
    tasks_.push_back({&layer.dense, dims_.intermediate, &all_rows_});
    run_experts();
    return;
  }
  // Router in F32: softmax over experts, top-k by score (lower index first on ties), weights not
  // renormalised unless norm_topk_prob.
  matmul_f32(pool_, norm_.data(), layer.router.data(), router_logits_.data(), rows, E, H);
  rows_of_expert_.resize(E);
  for (auto& assigned : rows_of_expert_) assigned.clear();  // keeps capacity: no allocation once warm
  std::vector<int64_t>& order = expert_order_;
  order.resize(E);
  for (int64_t r = 0; r < rows; ++r) {
    float* scores = router_logits_.data() + r * E;
    kernels_.softmax(scores, E);
    for (int64_t e = 0; e < E; ++e) order[e] = e;
    std::partial_sort(order.begin(), order.begin() + dims_.top_k, order.end(),
                      [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
    float norm = 1.f;
    if (dims_.norm_topk) {
      float sum = 0.f;
      for (int64_t k = 0; k < dims_.top_k; ++k) sum += scores[order[k]];
      norm = 1.f / (sum + 1e-20f);
    }
    for (int64_t k = 0; k < dims_.top_k; ++k)
      rows_of_expert_[order[k]].emplace_back(r, scores[order[k]] * norm * dims_.routed_scaling);
  }
  // Routed experts in index order, then the shared ones: every row sums its experts in the same
  // order whatever else is in the batch.
  const Int8Layer* int8 = int8_layers_.empty() ? nullptr : &int8_layers_[&layer - layers_.data()];
  for (int64_t e = 0; e < E; ++e) {
    if (rows_of_expert_[e].empty()) continue;
    tasks_.push_back({&layer.experts[e], dims_.moe_intermediate, &rows_of_expert_[e], int8 ? &int8->experts[e] : nullptr});
    ++routed_expert_passes_;
  }
  if (dims_.n_shared > 0)
    tasks_.push_back({&layer.shared, dims_.n_shared * dims_.moe_intermediate, &all_rows_, int8 ? &int8->shared : nullptr});
  run_experts();
}

// The products gathered in products_ (BF16) and int8_products_, one dispatch each.
void Decoder::run_products() {
  if (!products_.empty()) matmul_bf16_group(pool_, products_, precision_);
  if (!int8_products_.empty()) matmul_int8_group(pool_, int8_products_, precision_);
}

// Runs tasks_ in waves of at most kWaveRows gathered rows (a larger task runs alone): per wave,
// one dispatch for every task's gate and up products, one for every down product, so the
// selected experts of a decode step stream through memory in two passes of the pool.
void Decoder::run_experts() {
  constexpr int64_t kWaveRows = 1024;
  const int64_t H = dims_.hidden;
  for (size_t first = 0; first < tasks_.size();) {
    size_t end = first;
    int64_t rows = 0, mid = 0;
    while (end < tasks_.size()) {
      const int64_t m = static_cast<int64_t>(tasks_[end].rows->size());
      if (end > first && rows + m > kWaveRows) break;
      rows += m;
      mid += m * tasks_[end].width;
      ++end;
    }
    grow(expert_in_, rows * H);
    grow(expert_out_, rows * H);
    grow(gate_, mid);
    grow(up_, mid);
    products_.clear();
    int8_products_.clear();
    int64_t row = 0, offset = 0;
    for (size_t t = first; t < end; ++t) {
      const ExpertTask& task = tasks_[t];
      const int64_t m = static_cast<int64_t>(task.rows->size());
      for (int64_t i = 0; i < m; ++i)
        std::copy_n(norm_.data() + (*task.rows)[i].first * H, H, expert_in_.data() + (row + i) * H);
      const float* x = expert_in_.data() + row * H;
      if (task.int8) {
        int8_products_.push_back({x, task.int8->gate.view(), gate_.data() + offset, m, task.width});
        int8_products_.push_back({x, task.int8->up.view(), up_.data() + offset, m, task.width});
      } else {
        products_.push_back({x, &task.expert->gate, gate_.data() + offset, m, task.width, H});
        products_.push_back({x, &task.expert->up, up_.data() + offset, m, task.width, H});
      }
      row += m;
      offset += m * task.width;
    }
    run_products();
    kernels_.swiglu(gate_.data(), up_.data(), gate_.data(), mid);
    products_.clear();
    int8_products_.clear();
    row = 0, offset = 0;
    for (size_t t = first; t < end; ++t) {
      const ExpertTask& task = tasks_[t];
      const int64_t m = static_cast<int64_t>(task.rows->size());
      float* y = expert_out_.data() + row * H;
      if (task.int8)
        int8_products_.push_back({gate_.data() + offset, task.int8->down.view(), y, m, H});
      else
        products_.push_back({gate_.data() + offset, &task.expert->down, y, m, H, task.width});
      row += m;
      offset += m * task.width;
    }
    run_products();
    row = 0;
    for (size_t t = first; t < end; ++t)
      for (const auto& [r, weight] : *tasks_[t].rows) kernels_.axpy(x_.data() + r * H, weight, expert_out_.data() + row++ * H, H);
    first = end;
  }
}

}  // namespace scriptorium
