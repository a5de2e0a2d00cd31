// The decoder's operations as compute shaders (shaders/*.comp), recorded into a CommandBatch. Every
// operand is a buffer and an element offset into it (f32, int32, or bf16 elements for weights);
// each call checks that the ranges it will touch lie inside its buffers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/precision.h"
#include "vulkan/buffers.h"
#include "vulkan/pipelines.h"

namespace scriptorium::vk {

// A buffer and an element offset into it.
struct Operand {
  const Buffer* buffer;
  uint64_t offset = 0;
};

class ShaderOps {
 public:
  static constexpr uint32_t kMaxHeadDim = 256, kMaxExperts = 256;

  // matmul_path: kPortablePath or kCooperativeMatrixPath (only where the device chose it, and only in
  // fast precision: its shader rounds activations to FP16); "" takes model_matmul_path's choice.
  // precision: how matmul_bf16 treats its activations (Exact: F32; Fast: rounded once to BF16 on the
  // portable path, to FP16 on the cooperative-matrix one).
  explicit ShaderOps(Device& device, const std::string& matmul_path = "", Precision precision = Precision::Exact);
  ~ShaderOps();

  static constexpr uint32_t kMatvecRows = 8;  // up to here matmul_bf16 takes the matrix-vector shader
  static constexpr uint32_t kMoeBlockRows = 8;  // entries per block of the grouped expert products

  // Entries moe_align fills at most for `picks` top-k picks among `experts`: each pick plus the
  // padding of every expert used (fewer than kMoeBlockRows each), a multiple of kMoeBlockRows.
  static uint64_t moe_capacity(uint64_t picks, uint32_t experts);

  const std::string& matmul_path() const { return matmul_path_; }
  Precision precision() const { return precision_; }

  /* Y[M,N] = X[M,K] @ W[N,K]^T; X f32 (row stride ldx), W bf16 (row stride K), Y f32 (row stride ldy).
     M <= kMatvecRows: matvec_bf16.comp (W streamed once); larger M: the tiled matmul_bf16.comp, or
     matmul_bf16_coopmat.comp on the cooperative-matrix path; activations as `precision` says */
  void matmul_bf16(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M,
                   uint32_t N, uint32_t K);
  /* matmul_bf16 with F32 activations on the portable path whatever the precision: the vocabulary
     head, which the CPU keeps exact in fast precision */
  void matmul_bf16_exact(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M,
                         uint32_t N, uint32_t K);
  /* Y[M,N] = X[M,K] @ W[N,K]^T all in F32 (matvec_f32.comp): the MoE router, F32 like the CPU's */
  void matmul_f32(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M,
                  uint32_t N, uint32_t K);
  /* y[r,i] = x[r,i] * rsqrt(mean(x[r]^2) + eps) * w[i]; x, y f32 [rows, n] (strides ldx, ldy), w bf16 [n] */
  void rmsnorm(CommandBatch& batch, Operand x, uint32_t ldx, Operand w, Operand y, uint32_t ldy, uint32_t rows,
               uint32_t n, float eps);
  /* x[r, heads*d] (stride ldx) rotated in place at position pos[r]; table from rope_table() */
  void rope(CommandBatch& batch, Operand x, uint32_t ldx, Operand pos, const Buffer& table, uint32_t rows,
            uint32_t heads, uint32_t d);
  /* out[r, h*d..] = softmax(scale q[r,h] . K[j]) V[j] over the visible keys of row r:
     rowinfo int32 [rows, 2] = (element offset of the row's kv-head-0 key 0, visible count) into K and V
     (the same offsets in both), key row stride ldk; heads = group * kv_heads; d <= kMaxHeadDim */
  void attention(CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K, const Buffer& V, uint32_t ldk,
                 Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows, uint32_t heads, uint32_t group, uint32_t d,
                 float scale);
  /* attention over a half KV cache: K and V hold IEEE halves two to a word (kv_store_f16's rows), and
     rowinfo's offsets and ldk count halves; otherwise as attention */
  void attention_f16(CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K, const Buffer& V, uint32_t ldk,
                     Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows, uint32_t heads, uint32_t group,
                     uint32_t d, float scale);
  /* c[r, w] = halves x[r, 2w] (low) and x[r, 2w+1] (high; 0 past width), nearest even, saturated as the
     CPU's to_f16: x f32 [rows, width] (stride ldx), c uint32 words [rows, (width+1)/2] (stride ldc) */
  void kv_store_f16(CommandBatch& batch, Operand x, uint32_t ldx, Operand c, uint32_t ldc, uint32_t rows, uint32_t width);
  /* out[i] = silu(gate[i]) * up[i], i < n */
  void swiglu(CommandBatch& batch, Operand gate, Operand up, Operand out, uint32_t n);
  /* y[i] += a * x[i], i < n */
  void axpy(CommandBatch& batch, Operand y, float a, Operand x, uint32_t n);
  /* out[r, :] = table[ids[r] - first, :] as f32 for the rows whose id lies in [first, first + table_rows),
     other rows untouched; table bf16 [table_rows, hidden] (one block of the embedding's rows), ids
     int32 [rows] checked against the vocabulary by the caller */
  void embed(CommandBatch& batch, Operand table, uint32_t first, uint32_t table_rows, Operand ids, Operand out,
             uint32_t rows, uint32_t hidden);
  /* logits f32 [rows, experts] -> softmax in place; ids int32 / weights f32 [rows, top_k] (see router_topk.comp) */
  void router_topk(CommandBatch& batch, const Buffer& logits, const Buffer& ids, const Buffer& weights, uint32_t rows,
                   uint32_t experts, uint32_t top_k, bool norm_topk, float scaling);
  /* out[i, :] = x[rows[i], :] for i < n; x stride ldx, out stride width; rows int32 checked by the caller */
  void gather_rows(CommandBatch& batch, Operand x, uint32_t ldx, Operand rows, Operand out, uint32_t n, uint32_t width);
  /* MoE grouping of `picks` top-k picks (rows * top_k): ids int and weights f32 at the element offset
     picks_at.offset of their buffers -> entry_rows int / entry_weights f32 [capacity], blocks int
     [capacity / kMoeBlockRows, 2], row_slots int [picks] (see moe_align.comp); capacity a multiple of
     kMoeBlockRows of at least moe_capacity(picks, experts); ids outside [0, experts) are dropped */
  void moe_align(CommandBatch& batch, const Buffer& ids, const Buffer& weights, uint64_t picks_at, const Buffer& entry_rows,
                 const Buffer& entry_weights, const Buffer& blocks, const Buffer& row_slots, uint32_t picks, uint32_t top_k,
                 uint32_t experts, uint32_t capacity);
  /* Y[i, :N] = X[i, :K] @ W[e - first]^T for the real entries i of each block of an expert e in
     [first, first + experts) (blocks from moe_align; blocks of other experts untouched); W bf16
     [experts, N, K] (one binding's range of a stack), X f32 (stride ldx) and Y f32 (stride ldy) [capacity rows] */
  void moe_matmul_bf16(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, uint32_t first, uint32_t experts, Operand Y,
                       uint32_t ldy, const Buffer& blocks, uint32_t capacity, uint32_t N, uint32_t K);
  /* x[r, :] += entry_weights[s] * out[s, :] for the slots s of row r in row_slots order, r < rows;
     x f32 [rows, width], out f32 [capacity, width] (both stride width) */
  void moe_combine(CommandBatch& batch, Operand x, Operand out, const Buffer& row_slots, const Buffer& entry_weights,
                   uint32_t rows, uint32_t width, uint32_t top_k, uint32_t capacity);
  /* best[r] = first argmax of x[r, :n] (stride ldx) over the ids row r does not ban, int32 (0 when all
     are banned), and logprob[r] = the log-softmax of x[r, :n] over every id at best[r], f32, from a
     streamed log-sum-exp; bans int32 [rows, 2] = (offset, count) into banned, each row's ids sorted
     ascending and checked by the caller */
  void argmax(CommandBatch& batch, Operand x, uint32_t ldx, Operand best, Operand logprob, const Buffer& bans,
              const Buffer& banned, uint32_t rows, uint32_t n);

 private:
  void product(CommandBatch& batch, Operand X, uint32_t ldx, Operand W, Operand Y, uint32_t ldy, uint32_t M, uint32_t N,
               uint32_t K, bool fast);
  void attend(const Pipeline& pipeline, CommandBatch& batch, Operand q, uint32_t ldq, const Buffer& K, const Buffer& V,
              uint32_t ldk, Operand rowinfo, Operand out, uint32_t ldo, uint32_t rows, uint32_t heads, uint32_t group,
              uint32_t d, float scale);

  Device& device_;
  std::string matmul_path_;
  Precision precision_;
  std::unique_ptr<Pipeline> matmul_coopmat_;  // on the cooperative-matrix path only
  std::unique_ptr<Pipeline> matmul_bf16_, matvec_bf16_, matvec_f32_, rmsnorm_, rope_, attention_, attention_f16_, kv_store_f16_, swiglu_, axpy_, embed_,
      router_topk_, argmax_, gather_rows_, moe_align_, moe_matmul_bf16_, moe_combine_;
};

// The smallest maxComputeWorkGroupCount Vulkan allows.
constexpr uint32_t kMaxGroups = 65535;

// Workgroups of per_group invocations for n elements, at most kMaxGroups (shaders loop over the rest).
uint32_t groups(uint64_t n, uint32_t per_group);
// Throws std::invalid_argument unless elements [offset, offset + count) of `element_bytes` each lie
// inside the operand's buffer and are addressable by a shader's 32-bit index.
void require_range(const char* op, const char* operand, Operand o, uint64_t count, uint64_t element_bytes);
// Elements a [rows, width] operand with row stride ld spans.
uint64_t span(uint32_t rows, uint32_t width, uint32_t ld);

// The (cos, sin) table rope() reads, f32 [positions, d/2, 2], computed exactly as the CPU's
// rope_rotate_half computes its angles.
std::vector<float> rope_table(int64_t positions, int64_t d, float theta);

}  // namespace scriptorium::vk
