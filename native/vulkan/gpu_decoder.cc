#include "gpu_decoder.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

namespace scriptorium::vk {

namespace {

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

}  // namespace

GpuKvCache::GpuKvCache(Device& device, const DecoderDims& dims, KvCacheDtype dtype)
    : device_(device), dims_(dims), dtype_(dtype), rules_(dims), row_stride_(dims.kv_heads * dims.head_dim) {
  if (dtype_ == KvCacheDtype::F16) row_stride_ += row_stride_ % 2;
}

void GpuKvCache::reserve_rows(CommandBatch& batch, int64_t rows) {
  if (rows <= capacity_) return;
  const int64_t target = rules_.grown_capacity(rows, capacity_);
  const uint64_t row = row_bytes();
  auto k = std::make_unique<Buffer>(device_, dims_.layers * target * row);
  auto v = std::make_unique<Buffer>(device_, dims_.layers * target * row);
  if (rules_.length() > 0) {
    for (int64_t l = 0; l < dims_.layers; ++l) {
      batch.copy(*k_, l * capacity_ * row, *k, l * target * row, capacity_ * row);
      batch.copy(*v_, l * capacity_ * row, *v, l * target * row, capacity_ * row);
    }
    batch.run();  // the old buffers must outlive the copies
  }
  k_ = std::move(k);
  v_ = std::move(v);
  capacity_ = target;
}

GpuDecoder::GpuDecoder(Device& device, const Checkpoint& checkpoint, const DecoderDims& dims, const std::string& matmul_path,
                       Precision precision)
    : device_(device), dims_(dims), transfer_(device), weights_(device, transfer_), ops_(device, matmul_path, precision), batch_(device) {
  dims_.validate();
  if (dims_.head_dim > ShaderOps::kMaxHeadDim) throw VulkanError("the GPU backend supports head_dim up to 256");
  if (dims_.n_routed > ShaderOps::kMaxExperts) throw VulkanError("the GPU backend supports up to 256 routed experts");
  auto bf16 = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return weights_.upload_bf16(checkpoint.get(name, shape));
  };
  auto weights = load_decoder_weights<Operand, Operand>(dims_, bf16, bf16);
  embed_ = weights.embed;
  final_norm_ = weights.final_norm;
  lm_head_ = weights.lm_head;
  layers_ = std::move(weights.layers);
  upload(rope_table_, rope_table(dims_.max_positions, dims_.head_dim, dims_.rope_theta));
}

Buffer& GpuDecoder::scratch(std::unique_ptr<Buffer>& buffer, uint64_t bytes) {
  if (!buffer || buffer->bytes() < bytes) {
    batch_.run();  // a buffer about to be replaced may still be read by recorded commands
    buffer = std::make_unique<Buffer>(device_, bytes);
  }
  return *buffer;
}

template <typename T>
Buffer& GpuDecoder::upload(std::unique_ptr<Buffer>& buffer, const std::vector<T>& host) {
  batch_.run();  // recorded commands may still read the buffer's current contents
  Buffer& b = scratch(buffer, host.size() * sizeof(T));
  transfer_.upload(b, 0, host.data(), host.size() * sizeof(T));
  return b;
}

void GpuDecoder::validate(const std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches) const {
  if (caches.size() != entries.size()) throw std::invalid_argument("forward: one cache per entry");
  std::set<const GpuKvCache*> seen;
  for (size_t b = 0; b < entries.size(); ++b) {
    const ForwardEntry& entry = entries[b];
    const GpuKvCache* cache = caches[b];
    if (!cache) throw std::invalid_argument("forward: entry without a sequence");
    if (!seen.insert(cache).second) throw std::invalid_argument("forward: a sequence appears twice in one batch");
    check_forward_entry(dims_, entry, cache->rules_);
  }
}

void GpuDecoder::mlp(const Mlp& m, Operand in, uint32_t rows) {
  const uint32_t H = u32(dims_.hidden), W = u32(m.width);
  ops_.matmul_bf16(batch_, in, H, m.gate, {gate_.get(), 0}, W, rows, W, H);
  ops_.matmul_bf16(batch_, in, H, m.up, {up_.get(), 0}, W, rows, W, H);
  ops_.swiglu(batch_, {gate_.get(), 0}, {up_.get(), 0}, {gate_.get(), 0}, rows * W);
  ops_.matmul_bf16(batch_, {gate_.get(), 0}, W, m.down, {out_.get(), 0}, H, rows, H, W);
}

void GpuDecoder::feed_forward(const Layer& layer, uint32_t rows) {
  const uint32_t H = u32(dims_.hidden), E = u32(dims_.n_routed), K = u32(dims_.top_k);
  if (!layer.moe) {
    mlp(layer.dense, {norm_.get(), 0}, rows);
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {out_.get(), 0}, rows * H);
    return;
  }
  ops_.matmul_bf16_exact(batch_, {norm_.get(), 0}, H, layer.router, {router_logits_.get(), 0}, E, rows, E, H);
  ops_.router_topk(batch_, *router_logits_, *topk_ids_, *topk_weights_, rows, E, K, dims_.norm_topk, dims_.routed_scaling);
  batch_.run();
  std::vector<int32_t> picked(static_cast<size_t>(rows) * K);
  std::vector<float> picked_weights(picked.size());
  transfer_.download(*topk_ids_, 0, picked.data(), picked.size() * 4);
  transfer_.download(*topk_weights_, 0, picked_weights.data(), picked_weights.size() * 4);
  // Rows of each expert in row order, experts in index order: every row sums its experts in the
  // same order as the CPU decoder, whatever else is in the batch.
  std::vector<std::vector<std::pair<int32_t, float>>> rows_of_expert(E);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t k = 0; k < K; ++k) {
      const int32_t e = picked[r * K + k];
      if (e < 0 || e >= static_cast<int32_t>(E)) throw VulkanError("router_topk returned an invalid expert id");
      rows_of_expert[e].emplace_back(static_cast<int32_t>(r), picked_weights[r * K + k]);
    }
  std::vector<int32_t> expert_rows;
  std::vector<float> expert_weights;
  for (const auto& list : rows_of_expert)
    for (const auto& [r, w] : list) expert_rows.push_back(r), expert_weights.push_back(w);
  upload(expert_rows_, expert_rows);
  upload(expert_weights_, expert_weights);
  uint64_t first = 0;
  for (uint32_t e = 0; e < E; ++e) {
    const uint32_t m = static_cast<uint32_t>(rows_of_expert[e].size());
    if (m == 0) continue;
    ops_.gather_rows(batch_, {norm_.get(), 0}, H, {expert_rows_.get(), first}, {expert_in_.get(), 0}, m, H);
    mlp(layer.experts[e], {expert_in_.get(), 0}, m);
    ops_.scatter_add_rows(batch_, {x_.get(), 0}, H, {out_.get(), 0}, {expert_rows_.get(), first}, *expert_weights_, m, H);
    first += m;
  }
  if (dims_.n_shared > 0) {
    mlp(layer.shared, {norm_.get(), 0}, rows);
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {out_.get(), 0}, rows * H);
  }
}

void GpuDecoder::forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits,
                         int32_t* best) {
  validate(entries, caches);
  if (entries.empty()) return;
  try {
    run_forward(entries, caches, logits, best);
  } catch (...) {
    batch_.discard();  // commands recorded before the failure must not run with the next call
    release_scratch();  // a call that failed (out of device memory, say) keeps none of what it grew
    for (GpuKvCache* cache : caches) cache->rules_.abandon_append();
    throw;
  }
}

void GpuDecoder::release_scratch() {
  for (std::unique_ptr<Buffer>* buffer :
       {&x_, &norm_, &q_, &k_, &v_, &attn_, &proj_, &gate_, &up_, &out_, &expert_in_, &router_logits_, &topk_ids_,
        &topk_weights_, &ids_, &positions_, &rowinfo_, &embeds_, &expert_rows_, &expert_weights_, &last_index_, &last_,
        &logits_, &best_, &bans_, &banned_})
    buffer->reset();
}

void GpuDecoder::run_forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits,
                             int32_t* best) {
  const int64_t H = dims_.hidden, D = dims_.head_dim, QW = dims_.heads * D, KW = dims_.kv_heads * D;
  const int64_t B = static_cast<int64_t>(entries.size()), L = dims_.layers;
  int64_t rows = 0;
  for (const ForwardEntry& entry : entries) rows += static_cast<int64_t>(entry.ids.size());
  if (rows > 65535) throw std::invalid_argument("forward: at most 65535 new tokens per call on the GPU backend");

  int64_t width = dims_.intermediate;
  if (dims_.n_routed > 0) width = std::max({width, dims_.moe_intermediate, dims_.n_shared * dims_.moe_intermediate});
  scratch(x_, rows * H * 4);
  scratch(norm_, rows * H * 4);
  scratch(proj_, rows * H * 4);
  scratch(out_, rows * H * 4);
  scratch(expert_in_, rows * H * 4);
  scratch(q_, rows * QW * 4);
  scratch(attn_, rows * QW * 4);
  scratch(k_, rows * KW * 4);
  scratch(v_, rows * KW * 4);
  scratch(gate_, rows * width * 4);
  scratch(up_, rows * width * 4);
  scratch(router_logits_, rows * std::max<int64_t>(dims_.n_routed, 1) * 4);
  scratch(topk_ids_, rows * std::max<int64_t>(dims_.top_k, 1) * 4);
  scratch(topk_weights_, rows * std::max<int64_t>(dims_.top_k, 1) * 4);
  scratch(last_, B * H * 4);
  scratch(logits_, B * dims_.vocab * 4);
  scratch(best_, B * 4);

  // Host-side inputs: ids, positions, each row's visible keys per layer, replaced embeddings.
  std::vector<int32_t> ids, positions, last_index;
  std::vector<int32_t> rowinfo(static_cast<size_t>(L * rows * 2));
  std::vector<float> embeds;
  std::vector<std::pair<int64_t, int64_t>> embed_targets;  // (row in x, row in embeds)
  for (int64_t b = 0, r = 0; b < B; ++b) {
    ForwardEntry& entry = entries[b];
    GpuKvCache& cache = *caches[b];
    const int64_t n = static_cast<int64_t>(entry.ids.size());
    cache.reserve_rows(batch_, cache.rules_.begin_append(n));
    for (int64_t i = 0; i < n; ++i, ++r) {
      const int64_t pos = cache.length() + i;
      ids.push_back(entry.ids[i]);
      positions.push_back(static_cast<int32_t>(pos));
      for (int64_t l = 0; l < L; ++l) {
        rowinfo[(l * rows + r) * 2] = static_cast<int32_t>(l * cache.capacity_ * cache.row_stride_);
        rowinfo[(l * rows + r) * 2 + 1] = static_cast<int32_t>(cache.rules_.visible_slots(pos));
      }
    }
    last_index.push_back(static_cast<int32_t>(r - 1));
    for (size_t e = 0; e < entry.embed_rows.size(); ++e) {
      embed_targets.emplace_back(r - n + entry.embed_rows[e], static_cast<int64_t>(embed_targets.size()));
      embeds.insert(embeds.end(), entry.embeds.begin() + e * H, entry.embeds.begin() + (e + 1) * H);
    }
  }
  upload(ids_, ids);
  upload(positions_, positions);
  upload(rowinfo_, rowinfo);
  upload(last_index_, last_index);
  // Each sequence's banned ids (sorted) for the argmax on the device.
  std::vector<int32_t> bans(static_cast<size_t>(B) * 2), banned = {0};
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> list = entries[b].banned;
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    bans[b * 2] = static_cast<int32_t>(banned.size());
    bans[b * 2 + 1] = static_cast<int32_t>(list.size());
    banned.insert(banned.end(), list.begin(), list.end());
  }
  upload(bans_, bans);
  upload(banned_, banned);
  if (!embeds.empty()) upload(embeds_, embeds);

  const uint32_t R = u32(rows);
  ops_.embed(batch_, *embed_.buffer, {ids_.get(), 0}, {x_.get(), 0}, R, u32(H));
  for (const auto& [row, e] : embed_targets) batch_.copy(*embeds_, e * H * 4, *x_, row * H * 4, H * 4);
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  for (int64_t l = 0; l < L; ++l) {
    const Layer& layer = layers_[l];
    ops_.rmsnorm(batch_, {x_.get(), 0}, u32(H), layer.input_norm, {norm_.get(), 0}, u32(H), R, u32(H), dims_.rms_eps);
    ops_.matmul_bf16(batch_, {norm_.get(), 0}, u32(H), layer.wq, {q_.get(), 0}, u32(QW), R, u32(QW), u32(H));
    ops_.matmul_bf16(batch_, {norm_.get(), 0}, u32(H), layer.wk, {k_.get(), 0}, u32(KW), R, u32(KW), u32(H));
    ops_.matmul_bf16(batch_, {norm_.get(), 0}, u32(H), layer.wv, {v_.get(), 0}, u32(KW), R, u32(KW), u32(H));
    ops_.rope(batch_, {q_.get(), 0}, u32(QW), {positions_.get(), 0}, *rope_table_, R, u32(dims_.heads), u32(D));
    ops_.rope(batch_, {k_.get(), 0}, u32(KW), {positions_.get(), 0}, *rope_table_, R, u32(dims_.kv_heads), u32(D));
    // Every new key is stored before any query attends (a call's new tokens sit in consecutive slots).
    for (int64_t b = 0, r0 = 0; b < B; ++b) {
      const GpuKvCache& cache = *caches[b];
      const int64_t n = static_cast<int64_t>(entries[b].ids.size());
      const int64_t slot = l * cache.capacity_ + cache.rules_.slot_of(cache.length());
      if (cache.dtype_ == KvCacheDtype::F32) {
        batch_.copy(*k_, r0 * KW * 4, *cache.k_, slot * KW * 4, n * KW * 4);
        batch_.copy(*v_, r0 * KW * 4, *cache.v_, slot * KW * 4, n * KW * 4);
      } else {
        const uint64_t words = static_cast<uint64_t>(cache.row_stride_ / 2);
        ops_.kv_store_f16(batch_, {k_.get(), static_cast<uint64_t>(r0 * KW)}, u32(KW), {cache.k_.get(), slot * words},
                          u32(words), u32(n), u32(KW));
        ops_.kv_store_f16(batch_, {v_.get(), static_cast<uint64_t>(r0 * KW)}, u32(KW), {cache.v_.get(), slot * words},
                          u32(words), u32(n), u32(KW));
      }
      r0 += n;
    }
    for (int64_t b = 0, r0 = 0; b < B; ++b) {
      const GpuKvCache& cache = *caches[b];
      const int64_t n = static_cast<int64_t>(entries[b].ids.size());
      auto attention = cache.dtype_ == KvCacheDtype::F32 ? &ShaderOps::attention : &ShaderOps::attention_f16;
      (ops_.*attention)(batch_, {q_.get(), static_cast<uint64_t>(r0 * QW)}, u32(QW), *cache.k_, *cache.v_,
                        u32(cache.row_stride_), {rowinfo_.get(), static_cast<uint64_t>((l * rows + r0) * 2)},
                        {attn_.get(), static_cast<uint64_t>(r0 * QW)}, u32(QW), u32(n), u32(dims_.heads),
                        u32(dims_.heads / dims_.kv_heads), u32(D), scale);
      r0 += n;
    }
    ops_.matmul_bf16(batch_, {attn_.get(), 0}, u32(QW), layer.wo, {proj_.get(), 0}, u32(H), R, u32(H), u32(QW));
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {proj_.get(), 0}, R * u32(H));
    ops_.rmsnorm(batch_, {x_.get(), 0}, u32(H), layer.post_norm, {norm_.get(), 0}, u32(H), R, u32(H), dims_.rms_eps);
    feed_forward(layer, R);
  }
  for (int64_t b = 0; b < B; ++b) caches[b]->rules_.end_append(static_cast<int64_t>(entries[b].ids.size()));

  // Head: each sequence's last row through the final norm and lm_head; argmax on the device.
  const uint32_t V = u32(dims_.vocab);
  ops_.gather_rows(batch_, {x_.get(), 0}, u32(H), {last_index_.get(), 0}, {last_.get(), 0}, u32(B), u32(H));
  ops_.rmsnorm(batch_, {last_.get(), 0}, u32(H), final_norm_, {norm_.get(), 0}, u32(H), u32(B), u32(H), dims_.rms_eps);
  ops_.matmul_bf16_exact(batch_, {norm_.get(), 0}, u32(H), lm_head_, {logits_.get(), 0}, V, u32(B), V, u32(H));
  ops_.argmax(batch_, {logits_.get(), 0}, V, {best_.get(), 0}, *bans_, *banned_, u32(B), V);
  batch_.run();
  transfer_.download(*best_, 0, best, B * 4);
  for (int64_t b = 0, out_row = 0; b < B; ++b)
    if (entries[b].want_logits)
      transfer_.download(*logits_, static_cast<uint64_t>(b) * V * 4, logits + out_row++ * dims_.vocab, static_cast<uint64_t>(V) * 4);
}

}  // namespace scriptorium::vk
