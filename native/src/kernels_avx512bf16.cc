// AVX-512 BF16 kernel set: gemm_bf16 on VDPBF16PS; every other member is the avx512 set's.
// Activations are split as x ~ hi + lo with hi = bf16(x), lo = bf16(x - hi) (~16 mantissa bits),
// so Y = dp(hi, W) + dp(lo, W) keeps near-F32 accuracy while bf16 weights are used as stored.
// Compiled with the avx512 flags plus -mavx512bf16; only kernels_avx512bf16() is exported.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <new>

#include "kernels.h"

namespace scriptorium {

namespace {

// No std:: inline functions or templates here, only builtins: at -O0 those are emitted as weak
// symbols, and the linker could hand this file's ISA-specific copy to code that runs on any CPU.
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kXBlock = 384 << 10;  // bytes of split X rows (hi + lo) kept in L2 per block
constexpr int64_t kMinRows = 16;        // decode batches up to this many rows read W once

// Grow-only per-thread scratch, 64-byte aligned: no allocation once a thread has seen its largest
// X block.
bf16_t* scratch(int64_t elems) {
  thread_local struct Buffer {
    bf16_t* p = nullptr;
    int64_t n = 0;
    ~Buffer() { ::operator delete(p, std::align_val_t(64)); }
  } buf;
  if (buf.n < elems) {
    ::operator delete(buf.p, std::align_val_t(64));
    buf.p = static_cast<bf16_t*>(::operator new(elems * sizeof(bf16_t), std::align_val_t(64)));
    buf.n = elems;
  }
  return buf.p;
}

/* hi[Kp], lo[Kp] = split(x[K]), zero padded to Kp (a multiple of 32) */
void split_row(const float* x, int64_t K, int64_t Kp, bf16_t* hi, bf16_t* lo) {
  for (int64_t k = 0; k < Kp; k += 16) {
    const int64_t left = max64(0, K - k);
    const __mmask16 m = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + k);
    const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    const __m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    const __m256i l = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_sub_ps(v, hv)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(hi + k), h);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lo + k), l);
  }
}

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// Rows of the next W block that a tile prefetches in step with its k loop: row, row + stride, ...
struct Ahead {
  const bf16_t* row;
  int64_t count;
  int64_t stride;
};

template <int MR, int NR>
inline void dp_step(__m512 (&acc)[MR][NR], const __m512bh (&w)[NR], const bf16_t* S, int64_t lds,
                    int64_t k) {
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512bh h = as_bh(_mm512_load_si512(S + i * lds + k));
    const __m512bh l = as_bh(_mm512_load_si512(S + i * lds + lds / 2 + k));
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      acc[i][j] = _mm512_dpbf16_ps(acc[i][j], h, w[j]);
      acc[i][j] = _mm512_dpbf16_ps(acc[i][j], l, w[j]);
    }
  }
}

/* Y[MR, NR] = (H + L)[MR,K] @ W[NR,K]^T; row i of H at S + i*lds, of L at S + i*lds + lds/2 */
template <int MR, int NR>
void tile(const bf16_t* S, int64_t lds, const bf16_t* W, int64_t K, float* Y, int64_t ldy,
          Ahead ahead) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    for (int64_t r = 0; r < ahead.count; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k), _MM_HINT_T0);
    __m512bh w[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = as_bh(_mm512_loadu_si512(W + j * K + k));
    dp_step(acc, w, S, lds, k);
  }
  if (k < K) {
    const __mmask32 m = static_cast<__mmask32>((1u << (K - k)) - 1u);
    __m512bh w[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = as_bh(_mm512_maskz_loadu_epi16(m, W + j * K + k));
    dp_step(acc, w, S, lds, k);
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = _mm512_reduce_add_ps(acc[i][j]);
}

using TileFn = void (*)(const bf16_t*, int64_t, const bf16_t*, int64_t, float*, int64_t, Ahead);

// kTiles[MR - 1][NR - 1]. NR > 4 only for MR <= 2, where 4 columns give too few dot chains.
constexpr TileFn kTiles[4][8] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>, tile<1, 5>, tile<1, 6>, tile<1, 7>,
     tile<1, 8>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>, tile<2, 5>, tile<2, 6>, tile<2, 7>,
     tile<2, 8>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
    {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
};

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T. Each X block (mc rows) is split into scratch once; W is
   then walked in blocks of nb rows, each reused from L1 by every 4-row tile while those tiles
   prefetch the next W block. */
void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
               int64_t n0, int64_t n1, int64_t K) {
  const int64_t kp = (K + 31) / 32 * 32;
  const int64_t lds = 2 * kp;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (lds * 2)));
  bf16_t* S = scratch(mc * lds);
  const int64_t nb = M <= 2 ? 8 : 4;
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    const int64_t tiles = (rows + 3) / 4;
    for (int64_t i = 0; i < rows; ++i)
      split_row(X + (mb + i) * ldx, K, kp, S + i * lds, S + i * lds + kp);
    for (int64_t n = n0; n < n1; n += nb) {
      const int64_t nr = min64(nb, n1 - n);
      const int64_t next = min64(nb, max64(0, n1 - n - nb));
      for (int64_t m = 0, t = 0; m < rows; m += 4, ++t) {
        const int64_t mr = min64(4, rows - m);
        Ahead ahead{nullptr, 0, 0};
        if (t < next) ahead = {W + (n + nb + t) * K, (next - t + tiles - 1) / tiles, tiles * K};
        kTiles[mr - 1][nr - 1](S + m * lds, lds, W + n * K, K, Y + (mb + m) * ldy + n, ldy, ahead);
      }
    }
  }
}

}  // namespace

const KernelSet& kernels_avx512bf16() {
  static const KernelSet set = [] {
    KernelSet s = kernels_avx512();
    s.name = "avx512bf16";
    s.gemm_bf16 = gemm_bf16;
    return s;
  }();
  return set;
}

}  // namespace scriptorium
