#include "vulkan/gpu_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

namespace scriptorium::vk {

namespace {

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// Rows one grouped pass of the routed experts takes, so that its entries (moe_capacity) stay within
// one dispatch of gather_rows and of the grouped products; larger calls take several passes.
int64_t routed_pass_rows(const DecoderDims& dims) {
  const int64_t blocks = kMaxGroups / ShaderOps::kMoeBlockRows - 1 - dims.n_routed;
  return blocks * ShaderOps::kMoeBlockRows / dims.top_k;
}

}  // namespace

GpuKvCache::GpuKvCache(Device& device, const DecoderDims& dims, KvCacheDtype dtype)
    : device_(device), dims_(dims), dtype_(dtype), rules_(dims), row_stride_(dims.kv_heads * dims.head_dim) {
  if (dtype_ == KvCacheDtype::F16) row_stride_ += row_stride_ % 2;
}

void GpuKvCache::reserve_rows(CommandBatch& batch, int64_t rows) {
  if (rows <= capacity_) return;
  const uint64_t row = row_bytes();
  const int64_t fit = static_cast<int64_t>(device_.max_storage_range() / row);  // slots one layer's binding holds
  if (rows > fit)
    throw std::invalid_argument("forward: " + std::to_string(rows) + " cache slots of " + std::to_string(row) +
                                " bytes exceed the largest buffer " + device_.info().name + " can bind (" +
                                std::to_string(device_.max_storage_range()) + " bytes per layer); a half KV cache holds twice as many");
  const int64_t target = std::min(rules_.grown_capacity(rows, capacity_), fit);
  std::vector<std::unique_ptr<Buffer>> k, v;
  for (int64_t l = 0; l < dims_.layers; ++l) {
    k.push_back(std::make_unique<Buffer>(device_, target * row));
    v.push_back(std::make_unique<Buffer>(device_, target * row));
    if (rules_.length() > 0) {
      batch.copy(*k_[l], 0, *k[l], 0, capacity_ * row);
      batch.copy(*v_[l], 0, *v[l], 0, capacity_ * row);
    }
  }
  if (rules_.length() > 0) batch.run();  // the old buffers must outlive the copies
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
  const std::string embed_name = "model.embed_tokens.weight", head_name = "lm_head.weight";
  auto bf16 = [&](const std::string& name, const std::vector<int64_t>& shape) {
    if (name.find(".mlp.experts.") != std::string::npos) return Operand{};  // stacked below
    if (name == embed_name || name == head_name) return Operand{};  // in row blocks below
    return weights_.upload_bf16(checkpoint.get(name, shape));
  };
  embed_ = weights_.upload_bf16_rows(checkpoint.get(embed_name, {dims_.vocab, dims_.hidden}));
  auto router_f32 = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return weights_.upload_f32(checkpoint.f32(name, shape), name);
  };
  auto weights = load_decoder_weights<Operand, Operand>(dims_, bf16, router_f32);
  final_norm_ = weights.final_norm;
  lm_head_ = weights_.upload_bf16_rows(checkpoint.get(head_name, {dims_.vocab, dims_.hidden}));
  layers_ = std::move(weights.layers);
  expert_stacks_.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!layers_[l].moe) continue;
    layers_[l].experts.clear();
    auto stack = [&](const char* projection, const std::vector<int64_t>& shape) {
      std::vector<const TensorView*> tensors;
      for (int64_t e = 0; e < dims_.n_routed; ++e)
        tensors.push_back(&checkpoint.get("model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." +
                                              projection + ".weight",
                                          shape));
      return weights_.upload_bf16_stack(tensors);
    };
    const int64_t H = dims_.hidden, W = dims_.moe_intermediate;
    expert_stacks_[l] = {stack("gate_proj", {W, H}), stack("up_proj", {W, H}), stack("down_proj", {H, W})};
  }
  const std::vector<float> table = rope_table(dims_.max_positions, dims_.head_dim, dims_.rope_theta);
  rope_table_ = std::make_unique<Buffer>(device_, table.size() * 4);
  transfer_.upload(*rope_table_, 0, table.data(), table.size() * 4);
}

Buffer& GpuDecoder::scratch(std::unique_ptr<Buffer>& buffer, uint64_t bytes, bool host_visible) {
  if (!buffer || buffer->bytes() < bytes) {
    batch_.run();  // a buffer about to be replaced may still be read by recorded commands
    buffer.reset();  // freed before its successor counts against the budget
    buffer = host_visible ? Buffer::host_visible(device_, bytes) : std::make_unique<Buffer>(device_, bytes);
  }
  return *buffer;
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

void GpuDecoder::feed_forward(int64_t l, uint32_t rows) {
  const Layer& layer = layers_[l];
  const uint32_t H = u32(dims_.hidden);
  if (!layer.moe) {
    mlp(layer.dense, {norm_.get(), 0}, rows);
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {out_.get(), 0}, rows * H);
    return;
  }
  routed_experts(l, rows);
  if (dims_.n_shared > 0) {
    mlp(layer.shared, {norm_.get(), 0}, rows);
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {out_.get(), 0}, rows * H);
  }
}

// Router, top-k, grouping and the experts' products on the device: each pass gathers its rows by
// expert (rows of an expert in row order, experts in index order), runs every used expert's
// gate, up and down products as blocks of one dispatch each, and adds each row's experts to x in
// expert index order, as the CPU decoder does, whatever else is in the batch.
void GpuDecoder::routed_experts(int64_t l, uint32_t rows) {
  const ExpertStack& experts = expert_stacks_[l];
  const uint32_t H = u32(dims_.hidden), E = u32(dims_.n_routed), K = u32(dims_.top_k), W = u32(dims_.moe_intermediate);
  ops_.matmul_f32(batch_, {norm_.get(), 0}, H, layers_[l].router, {router_logits_.get(), 0}, E, rows, E, H);
  ops_.router_topk(batch_, *router_logits_, *topk_ids_, *topk_weights_, rows, E, K, dims_.norm_topk, dims_.routed_scaling);
  const uint32_t pass_rows = u32(routed_pass_rows(dims_));
  for (uint32_t r0 = 0; r0 < rows; r0 += pass_rows) {
    const uint32_t n = std::min(pass_rows, rows - r0);
    const uint32_t capacity = u32(ShaderOps::moe_capacity(static_cast<uint64_t>(n) * K, E));
    ops_.moe_align(batch_, *topk_ids_, *topk_weights_, static_cast<uint64_t>(r0) * K, *entry_rows_, *entry_weights_,
                   *expert_blocks_, *row_slots_, n * K, K, E, capacity);
    ops_.gather_rows(batch_, {norm_.get(), static_cast<uint64_t>(r0) * H}, H, {entry_rows_.get(), 0}, {expert_in_.get(), 0},
                     capacity, H);
    // One product per binding of the stacks; each writes the blocks of its own experts.
    auto product = [&](Operand in, uint32_t ldx, const RowBlocks& stack, Operand out, uint32_t N, uint32_t K) {
      for (size_t i = 0; i < stack.blocks.size(); ++i)
        ops_.moe_matmul_bf16(batch_, in, ldx, stack.blocks[i], u32(stack.first_row(i)), u32(stack.rows_in(i)), out, N,
                             *expert_blocks_, capacity, N, K);
    };
    product({expert_in_.get(), 0}, H, experts.gate, {gate_.get(), 0}, W, H);
    product({expert_in_.get(), 0}, H, experts.up, {up_.get(), 0}, W, H);
    ops_.swiglu(batch_, {gate_.get(), 0}, {up_.get(), 0}, {gate_.get(), 0}, capacity * W);
    product({gate_.get(), 0}, W, experts.down, {out_.get(), 0}, H, W);
    ops_.moe_combine(batch_, {x_.get(), static_cast<uint64_t>(r0) * H}, {out_.get(), 0}, *row_slots_, *entry_weights_, n,
                     H, K, capacity);
  }
}

void GpuDecoder::forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits,
                         int32_t* best, float* logprob) {
  validate(entries, caches);
  if (entries.empty()) return;
  try {
    run_forward(entries, caches, logits, best, logprob);
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
        &topk_weights_, &ids_, &positions_, &rowinfo_, &entry_rows_, &entry_weights_, &expert_blocks_, &row_slots_,
        &last_index_, &last_, &logits_, &best_, &logprob_, &bans_, &banned_, &inputs_host_, &results_host_})
    buffer->reset();
}

void GpuDecoder::run_forward(std::vector<ForwardEntry>& entries, const std::vector<GpuKvCache*>& caches, float* logits,
                             int32_t* best, float* logprob) {
  const int64_t H = dims_.hidden, D = dims_.head_dim, QW = dims_.heads * D, KW = dims_.kv_heads * D;
  const int64_t B = static_cast<int64_t>(entries.size()), L = dims_.layers;
  int64_t rows = 0;
  for (const ForwardEntry& entry : entries) rows += static_cast<int64_t>(entry.ids.size());
  if (rows > 65535) throw std::invalid_argument("forward: at most 65535 new tokens per call on the GPU backend");

  // Activations of `rows`; the routed experts' entries of one pass (moe_capacity) share gate_, up_ and out_.
  int64_t width = dims_.intermediate, moe_entries = 0;
  if (dims_.n_routed > 0) {
    width = std::max(width, dims_.n_shared * dims_.moe_intermediate);
    const int64_t pass = std::min(rows, routed_pass_rows(dims_));
    moe_entries = static_cast<int64_t>(ShaderOps::moe_capacity(static_cast<uint64_t>(pass * dims_.top_k), u32(dims_.n_routed)));
    scratch(expert_in_, moe_entries * H * 4);
    scratch(entry_rows_, moe_entries * 4);
    scratch(entry_weights_, moe_entries * 4);
    scratch(expert_blocks_, moe_entries / ShaderOps::kMoeBlockRows * 2 * 4);
    scratch(row_slots_, pass * dims_.top_k * 4);
  }
  scratch(x_, rows * H * 4);
  scratch(norm_, rows * H * 4);
  scratch(proj_, rows * H * 4);
  scratch(out_, std::max(rows, moe_entries) * H * 4);
  scratch(q_, rows * QW * 4);
  scratch(attn_, rows * QW * 4);
  scratch(k_, rows * KW * 4);
  scratch(v_, rows * KW * 4);
  scratch(gate_, std::max(rows * width, moe_entries * dims_.moe_intermediate) * 4);
  scratch(up_, std::max(rows * width, moe_entries * dims_.moe_intermediate) * 4);
  scratch(router_logits_, rows * std::max<int64_t>(dims_.n_routed, 1) * 4);
  scratch(topk_ids_, rows * std::max<int64_t>(dims_.top_k, 1) * 4);
  scratch(topk_weights_, rows * std::max<int64_t>(dims_.top_k, 1) * 4);
  scratch(last_, B * H * 4);
  scratch(logits_, B * dims_.vocab * 4);
  scratch(best_, B * 4);
  scratch(logprob_, B * 4);
  int64_t logit_rows = 0;
  for (const ForwardEntry& entry : entries) logit_rows += entry.want_logits ? 1 : 0;
  scratch(results_host_, (2 * B + logit_rows * dims_.vocab) * 4, true);

  // Host-side inputs: ids, positions, each row's visible keys per layer, replaced embeddings.
  std::vector<int32_t> ids, positions, last_index;
  std::vector<int32_t> rowinfo(static_cast<size_t>(L * rows * 2));
  std::vector<float> embeds;
  std::vector<std::pair<int64_t, int64_t>> embed_targets;  // (row in x, row in embeds)
  for (int64_t b = 0, r = 0; b < B; ++b) {
    ForwardEntry& entry = entries[b];
    GpuKvCache& cache = *caches[b];
    const int64_t n = static_cast<int64_t>(entry.ids.size());
    cache.reserve_rows(batch_, cache.rules_.begin_append(n, entry.prompt_tokens));
    for (int64_t i = 0; i < n; ++i, ++r) {
      const int64_t pos = cache.length() + i;
      ids.push_back(entry.ids[i]);
      positions.push_back(static_cast<int32_t>(pos));
      for (int64_t l = 0; l < L; ++l) {
        rowinfo[(l * rows + r) * 2] = 0;  // each layer's keys start its own buffers
        rowinfo[(l * rows + r) * 2 + 1] = static_cast<int32_t>(cache.rules_.visible_slots(pos));
      }
    }
    last_index.push_back(static_cast<int32_t>(r - 1));
    for (size_t e = 0; e < entry.embed_rows.size(); ++e) {
      embed_targets.emplace_back(r - n + entry.embed_rows[e], static_cast<int64_t>(embed_targets.size()));
      embeds.insert(embeds.end(), entry.embeds.begin() + e * H, entry.embeds.begin() + (e + 1) * H);
    }
  }
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
  const std::vector<uint64_t> staged = stage_inputs({{&ids_, ids.data(), ids.size() * 4},
                                                     {&positions_, positions.data(), positions.size() * 4},
                                                     {&rowinfo_, rowinfo.data(), rowinfo.size() * 4},
                                                     {&last_index_, last_index.data(), last_index.size() * 4},
                                                     {&bans_, bans.data(), bans.size() * 4},
                                                     {&banned_, banned.data(), banned.size() * 4},
                                                     {nullptr, embeds.data(), embeds.size() * 4}});

  const uint32_t R = u32(rows);
  for (size_t i = 0; i < embed_.blocks.size(); ++i)  // each block fills the rows of its ids
    ops_.embed(batch_, embed_.blocks[i], u32(embed_.first_row(i)), u32(embed_.rows_in(i)), {ids_.get(), 0}, {x_.get(), 0}, R,
               u32(H));
  for (const auto& [row, e] : embed_targets) batch_.copy(*inputs_host_, staged.back() + e * H * 4, *x_, row * H * 4, H * 4);
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
      const int64_t slot = cache.rules_.slot_of(cache.length());
      if (cache.dtype_ == KvCacheDtype::F32) {
        batch_.copy(*k_, r0 * KW * 4, *cache.k_[l], slot * KW * 4, n * KW * 4);
        batch_.copy(*v_, r0 * KW * 4, *cache.v_[l], slot * KW * 4, n * KW * 4);
      } else {
        const uint64_t words = static_cast<uint64_t>(cache.row_stride_ / 2);
        ops_.kv_store_f16(batch_, {k_.get(), static_cast<uint64_t>(r0 * KW)}, u32(KW), {cache.k_[l].get(), slot * words},
                          u32(words), u32(n), u32(KW));
        ops_.kv_store_f16(batch_, {v_.get(), static_cast<uint64_t>(r0 * KW)}, u32(KW), {cache.v_[l].get(), slot * words},
                          u32(words), u32(n), u32(KW));
      }
      r0 += n;
    }
    for (int64_t b = 0, r0 = 0; b < B; ++b) {
      const GpuKvCache& cache = *caches[b];
      const int64_t n = static_cast<int64_t>(entries[b].ids.size());
      auto attention = cache.dtype_ == KvCacheDtype::F32 ? &ShaderOps::attention : &ShaderOps::attention_f16;
      (ops_.*attention)(batch_, {q_.get(), static_cast<uint64_t>(r0 * QW)}, u32(QW), *cache.k_[l], *cache.v_[l],
                        u32(cache.row_stride_), {rowinfo_.get(), static_cast<uint64_t>((l * rows + r0) * 2)},
                        {attn_.get(), static_cast<uint64_t>(r0 * QW)}, u32(QW), u32(n), u32(dims_.heads),
                        u32(dims_.heads / dims_.kv_heads), u32(D), scale);
      r0 += n;
    }
    ops_.matmul_bf16(batch_, {attn_.get(), 0}, u32(QW), layer.wo, {proj_.get(), 0}, u32(H), R, u32(H), u32(QW));
    ops_.axpy(batch_, {x_.get(), 0}, 1.f, {proj_.get(), 0}, R * u32(H));
    ops_.rmsnorm(batch_, {x_.get(), 0}, u32(H), layer.post_norm, {norm_.get(), 0}, u32(H), R, u32(H), dims_.rms_eps);
    feed_forward(l, R);
  }
  for (int64_t b = 0; b < B; ++b) caches[b]->rules_.end_append(static_cast<int64_t>(entries[b].ids.size()));

  // Head: each sequence's last row through the final norm and lm_head; argmax and log-probability on
  // the device. The host reads back best [B], logprob [B], then the logits rows asked for.
  const uint32_t V = u32(dims_.vocab);
  ops_.gather_rows(batch_, {x_.get(), 0}, u32(H), {last_index_.get(), 0}, {last_.get(), 0}, u32(B), u32(H));
  ops_.rmsnorm(batch_, {last_.get(), 0}, u32(H), final_norm_, {norm_.get(), 0}, u32(H), u32(B), u32(H), dims_.rms_eps);
  // Each block of the head's rows fills its columns of every logits row, so the argmax and the
  // streamed log-sum-exp below read whole rows as when the head is one binding.
  for (size_t i = 0; i < lm_head_.blocks.size(); ++i)
    ops_.matmul_bf16_exact(batch_, {norm_.get(), 0}, u32(H), lm_head_.blocks[i],
                           {logits_.get(), static_cast<uint64_t>(lm_head_.first_row(i))}, V, u32(B), u32(lm_head_.rows_in(i)), u32(H));
  ops_.argmax(batch_, {logits_.get(), 0}, V, {best_.get(), 0}, {logprob_.get(), 0}, *bans_, *banned_, u32(B), V);
  batch_.copy(*best_, 0, *results_host_, 0, B * 4);
  batch_.copy(*logprob_, 0, *results_host_, B * 4, B * 4);
  for (int64_t b = 0, out_row = 0; b < B; ++b)
    if (entries[b].want_logits)
      batch_.copy(*logits_, static_cast<uint64_t>(b) * V * 4, *results_host_, (2 * B + out_row++ * V) * 4, static_cast<uint64_t>(V) * 4);
  batch_.run();  // the call's one wait
  const auto* results = static_cast<const unsigned char*>(results_host_->mapped());
  std::memcpy(best, results, B * 4);
  std::memcpy(logprob, results + B * 4, B * 4);
  if (logit_rows > 0) std::memcpy(logits, results + 2 * B * 4, logit_rows * V * 4);
}

std::vector<uint64_t> GpuDecoder::stage_inputs(const std::vector<HostInput>& inputs) {
  uint64_t total = 0;
  for (const HostInput& input : inputs) {
    if (input.device) scratch(*input.device, input.bytes);
    total += input.bytes;
  }
  scratch(inputs_host_, total, true);
  auto* host = static_cast<unsigned char*>(inputs_host_->mapped());
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (const HostInput& input : inputs) {
    if (input.bytes > 0) std::memcpy(host + at, input.data, input.bytes);
    if (input.device) batch_.copy(*inputs_host_, at, **input.device, 0, input.bytes);
    offsets.push_back(at);
    at += input.bytes;
  }
  return offsets;
}

}  // namespace scriptorium::vk
