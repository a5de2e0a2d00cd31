// The vision encoders' operations that the decoder's ShaderOps lacks, as compute shaders
// (shaders/layer_norm, bias_act, im2col, copy_rows, sam_windows, sam_rel_bias, vision_attention*.comp). Operands are
// f32 buffers with element offsets; every call checks that the ranges it touches lie in its buffers.
#pragma once
#include <cstdint>
#include <memory>

#include "vulkan/buffers.h"
#include "vulkan/pipelines.h"
#include "vulkan/shader_ops.h"

namespace scriptorium::vk {

enum class Activation : uint32_t { None = 0, GeluErf = 1, QuickGelu = 2 };

// SAM's relative position tables of one attention call: Rh and Rw f32 [2S - 1, head_dim] in one buffer.
struct RelativePositions {
  const Buffer* buffer;
  uint64_t rh_offset, rw_offset;
  uint32_t side;  // S: the sequences are S x S grids
};

// Those tables applied to the queries: f32 [rows, heads, 2 side] from sam_rel_bias().
struct RelativeBias {
  Operand bias;
  uint32_t side;
};

// The keys each query of attention() reads; the defaults give every head its own keys and values and
// every token all L keys of its sequence.
struct AttentionKeys {
  uint32_t kv_group = 1;  // query heads per key/value head (grouped-query attention)
  // Qwen2's causal flow (DeepSeek-OCR-2): tokens t >= causal_from see keys 0 .. t only; earlier
  // tokens see keys 0 .. min(causal_from, L) - 1.
  uint32_t causal_from = UINT32_MAX;
};

class VisionShaderOps {
 public:
  static constexpr uint32_t kMaxHeadDim = 128, kMaxRelSide = 256;

  explicit VisionShaderOps(Device& device);
  ~VisionShaderOps();

  /* y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b; x, y [rows, n] (strides ldx, ldy, y may alias x);
     wb f32 [2, n]: the weight, then the bias */
  void layer_norm(CommandBatch& batch, Operand x, uint32_t ldx, Operand wb, Operand y, uint32_t ldy, uint32_t rows,
                  uint32_t n, float eps);
  /* y[i] = act(y[i] + b[i % period]) for i < n; b f32 [period] */
  void bias_act(CommandBatch& batch, Operand y, uint32_t n, Operand b, uint32_t period, Activation act);
  /* out[B * Ho * Wo, C * k * k] = conv patches of x[B, C, H, W] whose element (b, c, y, x) is at
     x.offset + b*sb + c*sc + y*sy + x*sx; Ho = (H + 2 pad - k) / stride + 1, Wo likewise */
  void im2col(CommandBatch& batch, Operand x, const uint32_t strides[4], uint32_t B, uint32_t C, uint32_t H, uint32_t W,
              uint32_t k, uint32_t stride, uint32_t pad, Operand out);
  /* out[v*o_view + r*ldo + c] = x[v*x_view + r*ldx + c] for v < views, r < rows, c < width */
  void copy_rows(CommandBatch& batch, Operand x, uint32_t x_view, uint32_t ldx, Operand out, uint32_t o_view, uint32_t ldo,
                 uint32_t views, uint32_t rows, uint32_t width);
  /* windows[views * per^2 * S^2, C] = grid[views, g, g, C] split into S x S windows, zero-padded
     (per = ceil(g / S)); merge: grid += the windows' rows instead */
  void sam_windows(CommandBatch& batch, Operand grid, Operand windows, uint32_t views, uint32_t g, uint32_t C, uint32_t S,
                   bool merge);
  /* out[r, h, j] = q[r, h] . Rh[qy - j + S - 1] (j < S) or q[r, h] . Rw[qx - (j - S) + S - 1] (j >= S)
     for rows r of S x S grids (token t = r % S^2 at qy = t / S, qx = t % S); q of row r at q_off + r * ld
     in qkv; out f32 [rows, heads, 2S] */
  void sam_rel_bias(CommandBatch& batch, const Buffer& qkv, uint64_t q_off, uint32_t ld, uint32_t rows, uint32_t heads,
                    uint32_t d, const RelativePositions& tables, Operand out);
  /* out[s*L + t, h*d..] = softmax(scale q.K^T (+ rel-pos bias)) V over the keys `keys` lets token t see,
     within each of seqs sequences of L tokens; q of row r at q_off + r * ld in qkv ([heads, d]), k and v
     at k_off / v_off + r * ld ([heads / kv_group, d]); rel: SAM's bias, L = side^2 */
  void attention(CommandBatch& batch, const Buffer& qkv, uint64_t q_off, uint64_t k_off, uint64_t v_off, uint32_t ld,
                 Operand out, uint32_t ldo, uint32_t seqs, uint32_t L, uint32_t heads, uint32_t d, float scale,
                 const RelativeBias* rel, AttentionKeys keys = {});

 private:
  Device& device_;
  // attention_ takes any head_dim; the other two are built for the head_dims of the real encoders
  // (64) and of the test checkpoints (32).
  std::unique_ptr<Pipeline> layer_norm_, bias_act_, im2col_, copy_rows_, sam_windows_, rel_bias_, attention_, attention_d32_,
      attention_d64_;
};

}  // namespace scriptorium::vk
