#include "vulkan/gpu_vision_ops.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "vulkan_shaders.h"

namespace scriptorium::vk {

namespace {

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

// Element counts the grid-stride shaders index with 32-bit integers.
uint32_t element_count(const char* op, uint64_t n) {
  if (n > UINT32_MAX) throw std::invalid_argument(std::string(op) + ": more than 2^32 elements in one dispatch");
  return u32(n);
}

}  // namespace

VisionShaderOps::VisionShaderOps(Device& device) : device_(device) {
  layer_norm_ = std::make_unique<Pipeline>(device, spirv::layer_norm, 3, 9 * 4);
  bias_act_ = std::make_unique<Pipeline>(device, spirv::bias_act, 2, 5 * 4);
  im2col_ = std::make_unique<Pipeline>(device, spirv::im2col, 2, 14 * 4);
  copy_rows_ = std::make_unique<Pipeline>(device, spirv::copy_rows, 2, 9 * 4);
  sam_windows_ = std::make_unique<Pipeline>(device, spirv::sam_windows, 2, 6 * 4);
  rel_bias_ = std::make_unique<Pipeline>(device, spirv::sam_rel_bias, 3, 9 * 4);
  attention_ = std::make_unique<Pipeline>(device, spirv::vision_attention, 3, 14 * 4);
  attention_d32_ = std::make_unique<Pipeline>(device, spirv::vision_attention_d32, 3, 14 * 4);
  attention_d64_ = std::make_unique<Pipeline>(device, spirv::vision_attention_d64, 3, 14 * 4);
}

VisionShaderOps::~VisionShaderOps() = default;

void VisionShaderOps::layer_norm(CommandBatch& batch, Operand x, uint32_t ldx, Operand wb, Operand y, uint32_t ldy,
                                 uint32_t rows, uint32_t n, float eps) {
  if (n == 0) throw std::invalid_argument("layer_norm: empty rows");
  require_range("layer_norm", "x", x, span(rows, n, ldx), 4);
  require_range("layer_norm", "weight and bias", wb, 2 * static_cast<uint64_t>(n), 4);
  require_range("layer_norm", "y", y, span(rows, n, ldy), 4);
  if ((rows + 63) / 64 > device_.max_workgroups_x()) throw std::invalid_argument("layer_norm: too many rows for one dispatch");
  struct {
    uint32_t rows, n, x_off, ldx, w_off, b_off, y_off, ldy;
    float eps;
  } push{rows, n, u32(x.offset), ldx, u32(wb.offset), u32(wb.offset + n), u32(y.offset), ldy, eps};
  batch.dispatch(*layer_norm_, {x.buffer, wb.buffer, y.buffer}, &push, (rows + 63) / 64);
}

void VisionShaderOps::bias_act(CommandBatch& batch, Operand y, uint32_t n, Operand b, uint32_t period, Activation act) {
  if (period == 0) throw std::invalid_argument("bias_act: the period must be positive");
  require_range("bias_act", "y", y, n, 4);
  require_range("bias_act", "b", b, period, 4);
  const uint32_t push[5] = {n, u32(y.offset), u32(b.offset), period, static_cast<uint32_t>(act)};
  batch.dispatch(*bias_act_, {y.buffer, b.buffer}, push, groups(n, 256));
}

void VisionShaderOps::im2col(CommandBatch& batch, Operand x, const uint32_t strides[4], uint32_t B, uint32_t C,
                             uint32_t H, uint32_t W, uint32_t k, uint32_t stride, uint32_t pad, Operand out) {
  if (k == 0 || stride == 0 || H + 2 * pad < k || W + 2 * pad < k)
    throw std::invalid_argument("im2col: the kernel is larger than the padded input");
  const uint32_t Ho = (H + 2 * pad - k) / stride + 1, Wo = (W + 2 * pad - k) / stride + 1;
  if (B == 0 || C == 0) throw std::invalid_argument("im2col: empty input");
  const uint32_t total = element_count("im2col", static_cast<uint64_t>(B) * Ho * Wo * C * k * k);
  const uint64_t last = static_cast<uint64_t>(B - 1) * strides[0] + static_cast<uint64_t>(C - 1) * strides[1] +
                        static_cast<uint64_t>(H - 1) * strides[2] + static_cast<uint64_t>(W - 1) * strides[3];
  require_range("im2col", "x", x, last + 1, 4);
  require_range("im2col", "out", out, total, 4);
  if (out.offset != 0) throw std::invalid_argument("im2col: the patches must start at the beginning of their buffer");
  const uint32_t push[14] = {total, C, k, stride, pad, H, W, Ho, Wo, u32(x.offset), strides[0], strides[1], strides[2], strides[3]};
  batch.dispatch(*im2col_, {x.buffer, out.buffer}, push, groups(total, 256));
}

void VisionShaderOps::copy_rows(CommandBatch& batch, Operand x, uint32_t x_view, uint32_t ldx, Operand out,
                                uint32_t o_view, uint32_t ldo, uint32_t views, uint32_t rows, uint32_t width) {
  const uint32_t total = element_count("copy_rows", static_cast<uint64_t>(views) * rows * width);
  if (total == 0) return;
  require_range("copy_rows", "x", x, static_cast<uint64_t>(views - 1) * x_view + span(rows, width, ldx), 4);
  require_range("copy_rows", "out", out, static_cast<uint64_t>(views - 1) * o_view + span(rows, width, ldo), 4);
  const uint32_t push[9] = {total, rows, width, u32(x.offset), x_view, ldx, u32(out.offset), o_view, ldo};
  batch.dispatch(*copy_rows_, {x.buffer, out.buffer}, push, groups(total, 256));
}

void VisionShaderOps::sam_windows(CommandBatch& batch, Operand grid, Operand windows, uint32_t views, uint32_t g,
                                  uint32_t C, uint32_t S, bool merge) {
  if (S == 0) throw std::invalid_argument("sam_windows: the window side must be positive");
  const uint32_t per = (g + S - 1) / S;
  const uint64_t grid_elements = static_cast<uint64_t>(views) * g * g * C;
  const uint64_t window_elements = static_cast<uint64_t>(views) * per * per * S * S * C;
  require_range("sam_windows", "grid", grid, grid_elements, 4);
  require_range("sam_windows", "windows", windows, window_elements, 4);
  if (grid.offset != 0 || windows.offset != 0)
    throw std::invalid_argument("sam_windows: the grid and the windows must start at the beginning of their buffers");
  const uint32_t n = element_count("sam_windows", merge ? grid_elements : window_elements);
  const uint32_t push[6] = {n, C, g, S, per, merge ? 1u : 0u};
  batch.dispatch(*sam_windows_, {grid.buffer, windows.buffer}, push, groups(n, 256));
}

void VisionShaderOps::sam_rel_bias(CommandBatch& batch, const Buffer& qkv, uint64_t q_off, uint32_t ld, uint32_t rows,
                                   uint32_t heads, uint32_t d, const RelativePositions& tables, Operand out) {
  const uint32_t S = tables.side;
  if (S == 0 || S > kMaxRelSide || rows % (S * S) != 0)
    throw std::invalid_argument("sam_rel_bias: the rows must be whole S x S grids with 1 <= S <= 256");
  const uint32_t total = element_count("sam_rel_bias", static_cast<uint64_t>(rows) * heads * 2 * S);
  require_range("sam_rel_bias", "q", Operand{&qkv, q_off}, span(rows, heads * d, ld), 4);
  const uint64_t table = static_cast<uint64_t>(2 * S - 1) * d;
  require_range("sam_rel_bias", "rel_pos_h", Operand{tables.buffer, tables.rh_offset}, table, 4);
  require_range("sam_rel_bias", "rel_pos_w", Operand{tables.buffer, tables.rw_offset}, table, 4);
  require_range("sam_rel_bias", "out", out, total, 4);
  const uint32_t push[9] = {total, heads, d, S, ld, u32(q_off), u32(tables.rh_offset), u32(tables.rw_offset), u32(out.offset)};
  batch.dispatch(*rel_bias_, {&qkv, tables.buffer, out.buffer}, push, groups(total, 64));
}

void VisionShaderOps::attention(CommandBatch& batch, const Buffer& qkv, uint64_t q_off, uint64_t k_off, uint64_t v_off,
                                uint32_t ld, Operand out, uint32_t ldo, uint32_t seqs, uint32_t L, uint32_t heads,
                                uint32_t d, float scale, const RelativeBias* rel, AttentionKeys keys) {
  if (d == 0 || d > kMaxHeadDim) throw std::invalid_argument("vision attention: head_dim must be in [1, 128]");
  if (seqs == 0 || L == 0 || heads == 0) throw std::invalid_argument("vision attention: empty attention");
  if (seqs > kMaxGroups || L > kMaxGroups || heads > kMaxGroups)
    throw std::invalid_argument("vision attention: too many sequences, tokens or heads for one dispatch");
  if (keys.kv_group == 0 || heads % keys.kv_group != 0)
    throw std::invalid_argument("vision attention: heads must be a multiple of the key/value group");
  if (keys.causal_from == 0) throw std::invalid_argument("vision attention: causal_from must be positive");
  const uint32_t rows = element_count("vision attention", static_cast<uint64_t>(seqs) * L);
  require_range("vision attention", "q", Operand{&qkv, q_off}, span(rows, heads * d, ld), 4);
  for (uint64_t off : {k_off, v_off})
    require_range("vision attention", "k and v", Operand{&qkv, off}, span(rows, heads / keys.kv_group * d, ld), 4);
  require_range("vision attention", "out", out, span(rows, heads * d, ldo), 4);
  uint32_t side = 0, bias_off = 0;
  const Buffer* bias = out.buffer;  // bound but unread without relative positions
  if (rel) {
    side = rel->side;
    if (side == 0 || side > kMaxRelSide || static_cast<uint64_t>(side) * side != L)
      throw std::invalid_argument("vision attention: relative positions need L = S * S tokens with S <= 256");
    require_range("vision attention", "relative bias", rel->bias, static_cast<uint64_t>(rows) * heads * 2 * side, 4);
    bias = rel->bias.buffer;
    bias_off = u32(rel->bias.offset);
  }
  struct {
    uint32_t L, d, ld, q_off, k_off, v_off, out_off, ldo, S, bias_off, heads, group, causal_from;
    float scale;
  } push{L, d, ld, u32(q_off), u32(k_off), u32(v_off), u32(out.offset), ldo, side, bias_off, heads, keys.kv_group,
         std::min(keys.causal_from, L), scale};
  const Pipeline& pipeline = d == 32 ? *attention_d32_ : d == 64 ? *attention_d64_ : *attention_;
  batch.dispatch(pipeline, {&qkv, bias, out.buffer}, &push, (L + 63) / 64, heads, seqs);
}

}  // namespace scriptorium::vk
