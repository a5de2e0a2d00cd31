#include "vulkan/shader_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "vulkan_shaders.h"

namespace scriptorium::vk {

uint32_t groups(uint64_t n, uint32_t per_group) {
  return static_cast<uint32_t>(std::min<uint64_t>((n + per_group - 1) / per_group, kMaxGroups));
}

void require_range(const char* op, const char* operand, Operand o, uint64_t count, uint64_t element_bytes) {
  const uint64_t end = o.offset + count;
  if (end * element_bytes > o.buffer->bytes() || end > UINT32_MAX)
    throw std::invalid_argument(std::string(op) + ": " + operand + " needs elements [" + std::to_string(o.offset) +
                                ", " + std::to_string(end) + ") of a buffer of " + std::to_string(o.buffer->bytes()) +
                                " bytes");
}

uint64_t span(uint32_t rows, uint32_t width, uint32_t ld) {
  if (width > ld && rows > 1) throw std::invalid_argument("row stride smaller than the row width");
  return rows == 0 ? 0 : static_cast<uint64_t>(rows - 1) * ld + width;
}

namespace {

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

}  // namespace

ShaderOps::ShaderOps(Device& device, const std::string& matmul_path, Precision precision)
    : device_(device),
      matmul_path_(matmul_path.empty() ? model_matmul_path(device.info(), precision == Precision::Fast) : matmul_path),
      precision_(precision) {
  if (matmul_path_ == kCooperativeMatrixPath) {
    if (precision_ != Precision::Fast) throw VulkanError("the cooperative-matrix path computes in fast precision only");
    if (device.info().matmul_path != kCooperativeMatrixPath)
      throw VulkanError(device.info().name + " cannot run the cooperative-matrix path");
    matmul_coopmat_ = std::make_unique<Pipeline>(device, spirv::matmul_bf16_coopmat, 3, 8 * 4);
  } else if (matmul_path_ != kPortablePath) {
    throw VulkanError("no matrix-product shader path \"" + matmul_path_ + "\"");
  }
  matmul_bf16_ = std::make_unique<Pipeline>(device, spirv::matmul_bf16, 3, 9 * 4);
  matvec_bf16_ = std::make_unique<Pipeline>(device, spirv::matvec_bf16, 3, 9 * 4);
  matvec_f32_ = std::make_unique<Pipeline>(device, spirv::matvec_f32, 3, 8 * 4);
  rmsnorm_ = std::make_unique<Pipeline>(device, spirv::rmsnorm, 3, 7 * 4);
  rope_ = std::make_unique<Pipeline>(device, spirv::rope, 3, 6 * 4);
  attention_ = std::make_unique<Pipeline>(device, spirv::attention, 5, 9 * 4);
  attention_f16_ = std::make_unique<Pipeline>(device, spirv::attention_f16, 5, 9 * 4);
  kv_store_f16_ = std::make_unique<Pipeline>(device, spirv::kv_store_f16, 2, 5 * 4);
  swiglu_ = std::make_unique<Pipeline>(device, spirv::swiglu, 3, 4 * 4);
  axpy_ = std::make_unique<Pipeline>(device, spirv::axpy, 2, 4 * 4);
  embed_ = std::make_unique<Pipeline>(device, spirv::embed, 3, 6 * 4);
  router_topk_ = std::make_unique<Pipeline>(device, spirv::router_topk, 3, 5 * 4);
  argmax_ = std::make_unique<Pipeline>(device, spirv::argmax, 5, 5 * 4);
  gather_rows_ = std::make_unique<Pipeline>(device, spirv::gather_rows, 3, 5 * 4);
  moe_align_ = std::make_unique<Pipeline>(device, spirv::moe_align, 6, 5 * 4);
  moe_matmul_bf16_ = std::make_unique<Pipeline>(device, spirv::moe_matmul_bf16, 4, 10 * 4);
  moe_combine_ = std::make_unique<Pipeline>(device, spirv::moe_combine, 4, 5 * 4);
}

ShaderOps::~ShaderOps() = default;

void ShaderOps::matmul_bf16(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy,
                            uint32_t M, uint32_t N, uint32_t K) {
  product(batch, X, ldx, W, Y, ldy, M, N, K, precision_ == Precision::Fast);
}

void ShaderOps::matmul_bf16_exact(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy,
                                  uint32_t M, uint32_t N, uint32_t K) {
  product(batch, X, ldx, W, Y, ldy, M, N, K, false);
}

void ShaderOps::matmul_f32(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M,
                           uint32_t N, uint32_t K) {
  if (M == 0 || N == 0 || K == 0) throw std::invalid_argument("matmul_f32: empty product");
  if (M > kMaxGroups || (N + 63) / 64 > device_.max_workgroups_x())
    throw std::invalid_argument("matmul_f32: too large for one dispatch");
  require_range("matmul_f32", "X", X, span(M, K, ldx), 4);
  require_range("matmul_f32", "W", W, static_cast<uint64_t>(N) * K, 4);
  require_range("matmul_f32", "Y", Y, span(M, N, ldy), 4);
  const uint32_t push[8] = {M, N, K, u32(X.offset), ldx, u32(W.offset), u32(Y.offset), ldy};
  batch.dispatch(*matvec_f32_, {X.buffer, W.buffer, Y.buffer}, push, (N + 63) / 64, M);
}

// fast: activations rounded by the shader (BF16 on the portable path; the cooperative-matrix path,
// taken only when fast, rounds to FP16); otherwise F32 on the portable path.
void ShaderOps::product(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M,
                        uint32_t N, uint32_t K, bool fast) {
  if (M == 0 || N == 0 || K == 0) throw std::invalid_argument("matmul_bf16: empty product");
  require_range("matmul_bf16", "X", X, span(M, K, ldx), 4);
  require_range("matmul_bf16", "W", W, static_cast<uint64_t>(N) * K, 2);
  require_range("matmul_bf16", "Y", Y, span(M, N, ldy), 4);
  const uint32_t push[9] = {M, N, K, u32(X.offset), ldx, u32(W.offset), u32(Y.offset), ldy, fast ? 1u : 0u};
  if (M <= kMatvecRows) {
    if ((N + 63) / 64 > device_.max_workgroups_x()) throw std::invalid_argument("matmul_bf16: too many columns for one dispatch");
    batch.dispatch(*matvec_bf16_, {X.buffer, W.buffer, Y.buffer}, push, (N + 63) / 64, M);
    return;
  }
  const bool coopmat = fast && matmul_coopmat_;
  const uint32_t tile = coopmat ? 64 : 32;  // output tile side of the shader
  const uint32_t gx = (N + tile - 1) / tile, gy = (M + tile - 1) / tile;
  if (gy > kMaxGroups) throw std::invalid_argument("matmul_bf16: too many rows for one dispatch");
  batch.dispatch(coopmat ? *matmul_coopmat_ : *matmul_bf16_, {X.buffer, W.buffer, Y.buffer}, push, gx, gy);
}

void ShaderOps::rmsnorm(CommandBatch& batch, Operand x, uint32_t ldx, Operand w, Operand y, uint32_t ldy,
                        uint32_t rows, uint32_t n, float eps) {
  if (rows > kMaxGroups) throw std::invalid_argument("rmsnorm: too many rows for one dispatch");
  require_range("rmsnorm", "x", x, span(rows, n, ldx), 4);
  require_range("rmsnorm", "w", w, n, 2);
  require_range("rmsnorm", "y", y, span(rows, n, ldy), 4);
  struct {
    uint32_t n, x_off, ldx, w_off, y_off, ldy;
    float eps;
  } push{n, u32(x.offset), ldx, u32(w.offset), u32(y.offset), ldy, eps};
  batch.dispatch(*rmsnorm_, {x.buffer, w.buffer, y.buffer}, &push, rows);
}

void ShaderOps::rope(CommandBatch& batch, Operand x, uint32_t ldx, Operand pos, const Buffer& table, uint32_t rows,
                     uint32_t heads, uint32_t d) {
  if (d == 0 || d % 2 != 0) throw std::invalid_argument("rope: head_dim must be even");
  if (rows > kMaxGroups) throw std::invalid_argument("rope: too many rows for one dispatch");
  require_range("rope", "x", x, span(rows, heads * d, ldx), 4);
  require_range("rope", "pos", pos, rows, 4);
  // Positions are checked against the table by whoever fills pos; the table must at least hold one.
  require_range("rope", "table", Operand{&table, 0}, d, 4);
  const uint32_t push[6] = {rows, heads, d, u32(x.offset), ldx, u32(pos.offset)};
  batch.dispatch(*rope_, {x.buffer, pos.buffer, &table}, push, groups(static_cast<uint64_t>(heads) * d / 2, 64), rows);
}

void ShaderOps::attention(CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K, const Buffer& V, uint32_t ldk,
                          Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows, uint32_t heads, uint32_t group,
                          uint32_t d, float scale) {
  attend(*attention_, batch, q, ldq, K, V, ldk, rowinfo, out, ldo, rows, heads, group, d, scale);
}

void ShaderOps::attention_f16(CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K, const Buffer& V,
                              uint32_t ldk, Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows, uint32_t heads,
                              uint32_t group, uint32_t d, float scale) {
  attend(*attention_f16_, batch, q, ldq, K, V, ldk, rowinfo, out, ldo, rows, heads, group, d, scale);
}

void ShaderOps::attend(const Pipeline& pipeline, CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K,
                       const Buffer& V, uint32_t ldk, Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows,
                       uint32_t heads, uint32_t group, uint32_t d, float scale) {
  if (d == 0 || d > kMaxHeadDim) throw std::invalid_argument("attention: head_dim must be in [1, 256]");
  if (group == 0 || heads % group != 0) throw std::invalid_argument("attention: heads must be a multiple of the group");
  if (rows > kMaxGroups || heads > kMaxGroups) throw std::invalid_argument("attention: too many rows or heads");
  require_range("attention", "q", q, span(rows, heads * d, ldq), 4);
  require_range("attention", "rowinfo", rowinfo, static_cast<uint64_t>(rows) * 2, 4);
  require_range("attention", "out", out, span(rows, heads * d, ldo), 4);
  if (rowinfo.offset % 2 != 0) throw std::invalid_argument("attention: rowinfo must start on an even element");
  struct {
    uint32_t d, group, q_off, ldq, ldk, out_off, ldo, row_off;
    float scale;
  } push{d, group, u32(q.offset), ldq, ldk, u32(out.offset), ldo, u32(rowinfo.offset / 2), scale};
  batch.dispatch(pipeline, {q.buffer, &K, &V, out.buffer, rowinfo.buffer}, &push, heads, rows);
}

void ShaderOps::kv_store_f16(CommandBatch& batch, Operand x, uint32_t ldx, Operand c, uint32_t ldc, uint32_t rows,
                             uint32_t width) {
  const uint32_t words = (width + 1) / 2;
  if (rows > kMaxGroups || words > kMaxGroups * 64u) throw std::invalid_argument("kv_store_f16: too many rows or columns");
  require_range("kv_store_f16", "x", x, span(rows, width, ldx), 4);
  require_range("kv_store_f16", "c", c, span(rows, words, ldc), 4);
  const uint32_t push[5] = {width, u32(x.offset), ldx, u32(c.offset), ldc};
  batch.dispatch(*kv_store_f16_, {x.buffer, c.buffer}, push, (words + 63) / 64, rows);
}

void ShaderOps::swiglu(CommandBatch& batch, Operand gate, Operand up, Operand out, uint32_t n) {
  require_range("swiglu", "gate", gate, n, 4);
  require_range("swiglu", "up", up, n, 4);
  require_range("swiglu", "out", out, n, 4);
  const uint32_t push[4] = {n, u32(gate.offset), u32(up.offset), u32(out.offset)};
  batch.dispatch(*swiglu_, {gate.buffer, up.buffer, out.buffer}, push, groups(n, 256));
}

void ShaderOps::axpy(CommandBatch& batch, Operand y, float a, Operand x, uint32_t n) {
  require_range("axpy", "y", y, n, 4);
  require_range("axpy", "x", x, n, 4);
  struct {
    uint32_t n, y_off, x_off;
    float a;
  } push{n, u32(y.offset), u32(x.offset), a};
  batch.dispatch(*axpy_, {y.buffer, x.buffer}, &push, groups(n, 256));
}

void ShaderOps::embed(CommandBatch& batch, Operand table, uint32_t first, uint32_t table_rows, Operand ids, Operand out,
                      uint32_t rows, uint32_t hidden) {
  if (rows > kMaxGroups) throw std::invalid_argument("embed: too many rows for one dispatch");
  require_range("embed", "ids", ids, rows, 4);
  require_range("embed", "out", out, static_cast<uint64_t>(rows) * hidden, 4);
  require_range("embed", "table", table, static_cast<uint64_t>(table_rows) * hidden, 2);
  const uint32_t push[6] = {hidden, u32(ids.offset), u32(out.offset), u32(table.offset), first, table_rows};
  batch.dispatch(*embed_, {table.buffer, ids.buffer, out.buffer}, push, groups(hidden, 256), rows);
}

void ShaderOps::router_topk(CommandBatch& batch, const Buffer& logits, const Buffer& ids, const Buffer& weights,
                            uint32_t rows, uint32_t experts, uint32_t top_k, bool norm_topk, float scaling) {
  if (experts == 0 || experts > kMaxExperts || top_k == 0 || top_k > experts)
    throw std::invalid_argument("router_topk: need 1 <= top_k <= experts <= 256");
  require_range("router_topk", "logits", Operand{&logits, 0}, static_cast<uint64_t>(rows) * experts, 4);
  require_range("router_topk", "ids", Operand{&ids, 0}, static_cast<uint64_t>(rows) * top_k, 4);
  require_range("router_topk", "weights", Operand{&weights, 0}, static_cast<uint64_t>(rows) * top_k, 4);
  struct {
    uint32_t rows, experts, top_k, norm_topk;
    float scaling;
  } push{rows, experts, top_k, norm_topk ? 1u : 0u, scaling};
  batch.dispatch(*router_topk_, {&logits, &ids, &weights}, &push, groups(rows, 64));
}

void ShaderOps::argmax(CommandBatch& batch, Operand x, uint32_t ldx, Operand best, Operand logprob, const Buffer& bans,
                       const Buffer& banned, uint32_t rows, uint32_t n) {
  if (n == 0) throw std::invalid_argument("argmax: empty rows");
  if (rows > kMaxGroups) throw std::invalid_argument("argmax: too many rows for one dispatch");
  require_range("argmax", "x", x, span(rows, n, ldx), 4);
  require_range("argmax", "best", best, rows, 4);
  require_range("argmax", "logprob", logprob, rows, 4);
  require_range("argmax", "bans", Operand{&bans, 0}, static_cast<uint64_t>(rows) * 2, 4);
  const uint32_t push[5] = {n, u32(x.offset), ldx, u32(best.offset), u32(logprob.offset)};
  batch.dispatch(*argmax_, {x.buffer, best.buffer, &bans, &banned, logprob.buffer}, push, rows);
}

void ShaderOps::gather_rows(CommandBatch& batch, Operand x, uint32_t ldx, Operand rows, Operand out, uint32_t n,
                            uint32_t width) {
  if (n > kMaxGroups) throw std::invalid_argument("gather_rows: too many rows for one dispatch");
  require_range("gather_rows", "x", x, width, 4);
  require_range("gather_rows", "rows", rows, n, 4);
  require_range("gather_rows", "out", out, static_cast<uint64_t>(n) * width, 4);
  const uint32_t push[5] = {width, u32(x.offset), ldx, u32(rows.offset), u32(out.offset)};
  batch.dispatch(*gather_rows_, {x.buffer, rows.buffer, out.buffer}, push, groups(width, 256), n);
}

uint64_t ShaderOps::moe_capacity(uint64_t picks, uint32_t experts) {
  return ((picks + kMoeBlockRows - 1) / kMoeBlockRows + std::min<uint64_t>(experts, picks)) * kMoeBlockRows;
}

void ShaderOps::moe_align(CommandBatch& batch, const Buffer& ids, const Buffer& weights, uint64_t picks_at,
                          const Buffer& entry_rows, const Buffer& entry_weights, const Buffer& blocks,
                          const Buffer& row_slots, uint32_t picks, uint32_t top_k, uint32_t experts, uint32_t capacity) {
  if (experts == 0 || experts > kMaxExperts || top_k == 0 || top_k > experts || picks % top_k != 0)
    throw std::invalid_argument("moe_align: need 1 <= top_k <= experts <= 256 and whole rows of picks");
  if (capacity % kMoeBlockRows != 0 || capacity < moe_capacity(picks, experts))
    throw std::invalid_argument("moe_align: capacity " + std::to_string(capacity) + " below the " +
                                std::to_string(moe_capacity(picks, experts)) + " entries the picks may need");
  require_range("moe_align", "ids", Operand{&ids, picks_at}, picks, 4);
  require_range("moe_align", "weights", Operand{&weights, picks_at}, picks, 4);
  require_range("moe_align", "entry_rows", Operand{&entry_rows, 0}, capacity, 4);
  require_range("moe_align", "entry_weights", Operand{&entry_weights, 0}, capacity, 4);
  require_range("moe_align", "blocks", Operand{&blocks, 0}, capacity / kMoeBlockRows * 2, 4);
  require_range("moe_align", "row_slots", Operand{&row_slots, 0}, picks, 4);
  const uint32_t push[5] = {picks, top_k, experts, capacity, u32(picks_at)};
  batch.dispatch(*moe_align_, {&ids, &weights, &entry_rows, &entry_weights, &blocks, &row_slots}, push, 1);
}

void ShaderOps::moe_matmul_bf16(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, uint32_t first, uint32_t experts,
                                Operand Y, uint32_t ldy, const Buffer& blocks, uint32_t capacity, uint32_t N, uint32_t K) {
  if (N == 0 || K == 0 || experts == 0) throw std::invalid_argument("moe_matmul_bf16: empty product");
  if (capacity % kMoeBlockRows != 0 || capacity / kMoeBlockRows > kMaxGroups)
    throw std::invalid_argument("moe_matmul_bf16: capacity must be a multiple of the block, at most 65535 blocks");
  require_range("moe_matmul_bf16", "X", X, span(capacity, K, ldx), 4);
  require_range("moe_matmul_bf16", "W", W, static_cast<uint64_t>(experts) * N * K, 2);
  require_range("moe_matmul_bf16", "Y", Y, span(capacity, N, ldy), 4);
  require_range("moe_matmul_bf16", "blocks", Operand{&blocks, 0}, capacity / kMoeBlockRows * 2, 4);
  if ((N + 63) / 64 > device_.max_workgroups_x()) throw std::invalid_argument("moe_matmul_bf16: too many columns for one dispatch");
  // Expert ids come from the device; the shader skips those outside [first, first + experts).
  const uint32_t round_x = precision_ == Precision::Fast ? 1u : 0u;
  const uint32_t push[10] = {N, K, u32(X.offset), ldx, u32(W.offset), u32(Y.offset), ldy, round_x, first, experts};
  batch.dispatch(*moe_matmul_bf16_, {X.buffer, W.buffer, Y.buffer, &blocks}, push, (N + 63) / 64, capacity / kMoeBlockRows);
}

void ShaderOps::moe_combine(CommandBatch& batch, Operand x, Operand out, const Buffer& row_slots,
                            const Buffer& entry_weights, uint32_t rows, uint32_t width, uint32_t top_k, uint32_t capacity) {
  if (rows > kMaxGroups) throw std::invalid_argument("moe_combine: too many rows for one dispatch");
  require_range("moe_combine", "x", x, static_cast<uint64_t>(rows) * width, 4);
  require_range("moe_combine", "out", out, static_cast<uint64_t>(capacity) * width, 4);
  require_range("moe_combine", "row_slots", Operand{&row_slots, 0}, static_cast<uint64_t>(rows) * top_k, 4);
  require_range("moe_combine", "entry_weights", Operand{&entry_weights, 0}, capacity, 4);
  const uint32_t push[5] = {width, top_k, capacity, u32(x.offset), u32(out.offset)};
  batch.dispatch(*moe_combine_, {x.buffer, out.buffer, &row_slots, &entry_weights}, push, groups(width, 256), rows);
}

std::vector<float> rope_table(int64_t positions, int64_t d, float theta) {
  const int64_t half = d / 2;
  std::vector<float> table(static_cast<size_t>(positions * half * 2));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
    const float inv_freq = 1.0f / std::pow(theta, exponent);
    for (int64_t pos = 0; pos < positions; ++pos) {
      const float angle = static_cast<float>(pos) * inv_freq;
      table[(pos * half + i) * 2] = std::cos(angle);
      table[(pos * half + i) * 2 + 1] = std::sin(angle);
    }
  }
  return table;
}

}  // namespace scriptorium::vk
