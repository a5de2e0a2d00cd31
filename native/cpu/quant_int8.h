// 8-bit weights for the decoder's experts and vocabulary head (`--quantize int8`): BF16 matrices
// converted once at load to int8 values with one F32 scale per group of columns, in the layout the
// active kernel set reads, and the matrix products that read them (scalar reference, AVX2, AVX-512,
// AVX-512 VNNI; NEON and NEON with dot products on arm64) behind one runtime dispatch like the BF16 kernel sets. The dequantising sets keep
// F32 activations; the sets with integer dot products (AVX-512 VNNI, NEON with dot products) round
// each activation row to 16-bit integers, or in fast precision to 8-bit ones (docs/model.md §7.6).
#pragma once
#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"

namespace scriptorium {

// Columns per scale the engine quantises with (the accuracy of 32, 64, 128 and whole rows is
// measured in native/test/quant_test.cc and docs/model.md).
constexpr int64_t kInt8Group = 64;

// How the int8 values of W[N, K] are stored; each kernel set reads one layout.
enum class Int8Layout {
  // q[N, K] row-major, scales[N, groups].
  Rows,
  // 16 rows interleaved by 4 columns, for vpdpbusd: q[ceil(N/16)][ceil(K/4)][16][4] holding q + 128
  // as an unsigned byte, scales[ceil(N/16)][groups][16]. One 64-byte load holds 4 columns of 16
  // rows. Padding rows and columns hold the weight 0 (the byte 128) and the scale 0.
  Tiles16,
};

// W[N, K] ~= q[N, K] * scale[N, k / group]: group is a multiple of 16 or equals K (one scale per
// row); the last group of a row may be shorter. A plain view, so every kernel set can take it.
struct Int8Weights {
  const int8_t* q;       // per layout
  const float* scales;   // per layout, groups = ceil(K / group)
  int64_t K, group, groups;
  Int8Layout layout;

  // The view of rows [n0, N): n0 must be a multiple of 16 for Tiles16.
  Int8Weights rows_from(int64_t n0) const;
};

// An owned quantised matrix, on huge-page slabs like packed BF16 weights (place_on_slabs): an
// expert's matrix is about a megabyte, too small for a huge page of its own.
struct Int8Matrix {
  int64_t rows = 0, cols = 0, group = 0;
  Int8Layout layout = Int8Layout::Rows;
  SlabArray<int8_t> q;       // per layout
  SlabArray<float> scales;   // per layout

  Int8Weights view() const;
  size_t bytes() const { return q.size() + scales.size() * sizeof(float); }
};

// Symmetric round to nearest per group: scale = max|w| / 127 (1 for an all-zero group),
// q = round(w / scale) in [-127, 127], stored in `layout`. Rows are split across the pool. Throws
// std::invalid_argument when group is neither a positive multiple of 16 nor cols.
Int8Matrix quantize_int8(ThreadPool& pool, const bf16_t* W, int64_t rows, int64_t cols, int64_t group,
                         Int8Layout layout);

struct QuantKernelSet {
  const char* name;  // "avx512vnni", "avx512", "avx2", "neondot", "neon", "scalar"
  // 0: activations stay F32 (only the weights are rounded); L > 0: each activation row is rounded
  // to integers in [-L, L] (one scale per row, max|x| / L), which adds at most max|x| / 2L per value.
  int activation_levels;
  Int8Layout layout;  // of the weights gemm_int8 reads

  // Y[m, n] = sum_k X[m, k] * (q[n, k] * scale[n, k / group]) for m in [0, M), n in [n0, n1):
  //   X[M, K] f32 (row stride ldx), W as Int8Weights in this set's layout, Y[M, N] f32 (row stride
//   ldy). Overwrites Y.
  // Each Y[m, n] is bitwise the same whatever M, n0 and n1 are (batching never changes a row).
  void (*gemm_int8)(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M,
                    int64_t n0, int64_t n1);
  // Fast precision's product, on the sets with integer dot products (nullptr on the others, which
  // keep F32 activations in both precisions): the same, with each activation rounded to an integer
  // in [-127, 127] with one scale per row and weight group (max|x| / 127 over the group's columns),
  // which adds at most that group's max|x| / 254 per value. One digit per activation, half the dot
  // products of gemm_int8's two.
  void (*gemm_int8_fast)(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M,
                         int64_t n0, int64_t n1);
};

// One set per quant_<isa>.cc; calling a set the CPU lacks is undefined behaviour.
const QuantKernelSet& quant_scalar();
#if defined(__x86_64__)
const QuantKernelSet& quant_avx2();
const QuantKernelSet& quant_avx512();
const QuantKernelSet& quant_avx512vnni();
#endif
#if defined(__aarch64__)
const QuantKernelSet& quant_neon();
const QuantKernelSet& quant_neondot();
#endif

// The set matching active_kernels(): SCRIPTORIUM_KERNELS=scalar forces the scalar one, avx2 the
// AVX2 one, and the AVX-512 sets the AVX-512 VNNI one where the CPU has it, else the AVX-512 one;
// on arm64 the neon sets the one with dot products where the CPU has them, else the NEON one.
const QuantKernelSet& active_quant_kernels();
// A named set, or nullptr when the CPU cannot run it or the name is unknown.
const QuantKernelSet* quant_kernels_by_name(const char* name);

// One product of a group: Y[M, N] = X[M, K] @ W[N, K]^T with row strides K (X) and N (Y).
struct MatmulInt8 {
  const float* X;
  Int8Weights W;
  float* Y;
  int64_t M, N;
};

// Every product of the group in one dispatch over their concatenated columns (as
// matmul_bf16_group does), so the selected experts of a decode step share one pass of the pool;
// Precision::Fast takes the set's gemm_int8_fast where it has one. Throws std::logic_error when a
// matrix is not in the active set's layout.
void matmul_int8_group(ThreadPool& pool, const std::vector<MatmulInt8>& group, Precision precision);

}  // namespace scriptorium
