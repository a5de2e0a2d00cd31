// AVX-512 BF16 kernel set: gemm_bf16, gemm_bf16_fast, gemm_nn_bf16 and the packed products on
// VDPBF16PS; every other member is the avx512 set's. gemm_bf16 splits activations as x ~ hi + lo
// with hi = bf16(x), lo = bf16(x - hi) (~16 mantissa bits), so Y = dp(hi, W) + dp(lo, W) keeps
// near-F32 accuracy while bf16 weights are used as stored. gemm_bf16_fast uses hi alone: one dot
// product per product, activations rounded once to BF16; so does gemm_nn_bf16 (fast precision's
// attention products), against a right operand packed in pairs of k. The packed products use that
// operand layout for weights packed once, with either split. Compiled with the avx512 flags plus
// -mavx512bf16; only kernels_avx512bf16() is exported.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <new>

#include "cpu/gemm_blocking.h"
#include "cpu/kernels.h"

namespace scriptorium {

namespace {

// No std:: inline functions or templates here, only builtins: at -O0 those are emitted as weak
// symbols, and the linker could hand this file's ISA-specific copy to code that runs on any CPU.
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kXBlock = 384 << 10;  // bytes of converted X rows (hi, or hi + lo) kept in L2 per block
constexpr int64_t kPackedXBlock = 192 << 10;  // the same beside a packed panel of W (measured best)
constexpr int64_t kMinRows = 16;        // decode batches up to this many rows read W once
constexpr int64_t kStreamRows = 4;      // up to here the split rows stay in L1 beside one W row

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

/* row[0:Kp] = hi = bf16(x[K]) and, with Parts == 2, row[Kp:2Kp] = lo = bf16(x - hi); zero padded
   to Kp (a multiple of 32) */
template <int Parts>
void convert_row(const float* x, int64_t K, int64_t Kp, bf16_t* row) {
  for (int64_t k = 0; k < Kp; k += 16) {
    const int64_t left = max64(0, K - k);
    const __mmask16 m = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + k);
    const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    _mm256_store_si256(reinterpret_cast<__m256i*>(row + k), h);
    if (Parts == 2) {
      const __m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      const __m256i l = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_sub_ps(v, hv)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(row + Kp + k), l);
    }
  }
}

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// Every output follows one summation order, whatever the tile or path: K is walked in 32-wide
// steps s (the last one zero-padded); step s adds dp(hi_s, w_s) then (Parts == 2) dp(lo_s, w_s) into acc[s & 1];
// y = reduce_add(acc[0] + acc[1]). Two chains per output hide the dot product's latency, and a
// batched row stays bitwise equal to a one-row call.

/* acc[i][j][P] += (H_i (+ L_i))[k:k+32] . W_j[k:k+32]; W rows j at W + j*ldw, masked by m */
template <int MR, int NR, int Parts, int P>
inline void dp_step(__m512 (&acc)[MR][NR][2], const bf16_t* S, int64_t lds, const bf16_t* W,
                    int64_t ldw, int64_t k, __mmask32 m) {
  __m512bh w[NR];
  #pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) w[j] = as_bh(_mm512_maskz_loadu_epi16(m, W + j * ldw + k));
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512bh h = as_bh(_mm512_load_si512(S + i * lds + k));
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j][P] = _mm512_dpbf16_ps(acc[i][j][P], h, w[j]);
    if (Parts == 2) {
      const __m512bh l = as_bh(_mm512_load_si512(S + i * lds + lds / 2 + k));
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j][P] = _mm512_dpbf16_ps(acc[i][j][P], l, w[j]);
    }
  }
}

inline void prefetch(const WeightPrefetch<bf16_t>& ahead, int64_t k) {
  for (int64_t r = 0; r < ahead.count; ++r) {
    const char* line = reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k);
    _mm_prefetch(line, _MM_HINT_T0);
    _mm_prefetch(line + 64, _MM_HINT_T0);
  }
}

inline __mmask32 step_mask(int64_t left) {
  return left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << left) - 1u);
}

/* Y[MR, NR] = (H (+ L))[MR,K] @ W[NR,K]^T; row i of H at S + i*lds, of L at S + i*lds + lds/2 */
template <int MR, int NR, int Parts>
void tile(const bf16_t* S, int64_t lds, const bf16_t* W, int64_t ldw, float* Y, int64_t ldy, int64_t K,
          WeightPrefetch<bf16_t> ahead) {
  __m512 acc[MR][NR][2];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j][0] = acc[i][j][1] = _mm512_setzero_ps();
  const __mmask32 all = ~__mmask32{0};
  int64_t k = 0;
  for (; k + 64 <= K; k += 64) {
    prefetch(ahead, k);
    dp_step<MR, NR, Parts, 0>(acc, S, lds, W, ldw, k, all);
    dp_step<MR, NR, Parts, 1>(acc, S, lds, W, ldw, k + 32, all);
  }
  if (k < K) dp_step<MR, NR, Parts, 0>(acc, S, lds, W, ldw, k, step_mask(K - k));
  if (k + 32 < K) dp_step<MR, NR, Parts, 1>(acc, S, lds, W, ldw, k + 32, step_mask(K - k - 32));
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][j][0], acc[i][j][1]));
}

using TileFn = void (*)(const bf16_t*, int64_t, const bf16_t*, int64_t, float*, int64_t, int64_t,
                       WeightPrefetch<bf16_t>);

// tiles<Parts>[MR - 1][NR - 1]. A 3x4 tile holds 24 accumulators, 4 W and 2 X vectors in registers.
template <int Parts>
constexpr TileFn kTiles[4][4] = {
    {tile<1, 1, Parts>, tile<1, 2, Parts>, tile<1, 3, Parts>, tile<1, 4, Parts>},
    {tile<2, 1, Parts>, tile<2, 2, Parts>, tile<2, 3, Parts>, tile<2, 4, Parts>},
    {tile<3, 1, Parts>, tile<3, 2, Parts>, tile<3, 3, Parts>, tile<3, 4, Parts>},
    {tile<4, 1, Parts>, nullptr, nullptr, nullptr},
};

template <int Parts>
struct Tiles {
  void operator()(int64_t mr, int64_t nr, const bf16_t* S, int64_t lds, const bf16_t* W, int64_t ldw, float* Y,
                  int64_t ldy, int64_t K, WeightPrefetch<bf16_t> ahead) const {
    kTiles<Parts>[mr - 1][nr - 1](S, lds, W, ldw, Y, ldy, K, ahead);
  }
};

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T with X converted to Parts BF16 parts (2: split, 1: rounded).
   Each X block (mc rows) is converted into scratch once, then
   multiplied by all of W[n0:n1]. Up to kStreamRows rows (decode), W is read one row at a time,
   front to back, without prefetching: one sequential stream per thread keeps DRAM busiest, and
   the row serves every X row from L1. More rows are compute bound: 3x4 tiles, each W block reused
   from L1 by every X row of the block while the tiles prefetch the next block between them. */
template <int Parts>
void gemm_parts(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
                int64_t n0, int64_t n1, int64_t K) {
  const int64_t kp = (K + 31) / 32 * 32;
  const int64_t lds = Parts * kp;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (lds * 2)));
  bf16_t* S = scratch(mc * lds);
  const bool stream = M <= kStreamRows;
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<Parts>(X + (mb + i) * ldx, K, kp, S + i * lds);
    const GemmBlocking blocking{stream ? 4 : 3, stream ? 1 : 4, rows, max64(1, n1 - n0), !stream};
    gemm_blocked(Tiles<Parts>{}, blocking, S, lds, W, K, Y + mb * ldy, ldy, rows, n0, n1, K);
  }
}

void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
               int64_t n0, int64_t n1, int64_t K) {
  gemm_parts<2>(X, ldx, W, Y, ldy, M, n0, n1, K);
}

void gemm_bf16_fast(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
                    int64_t n0, int64_t n1, int64_t K) {
  gemm_parts<1>(X, ldx, W, Y, ldy, M, n0, n1, K);
}

/* Y[MR, cols] = (H (+ L))[MR,K] @ B[K, cols] with H bf16 rows (row i at S + i*lds, zero past K; with
   Parts == 2, L at S + i*lds + lds/2) and B in pairs of k (pair p, column n at B + p*ldb + 2n);
   cols <= 16 * NV, the last vector masked by m. Each output adds dp(H pair) then dp(L pair), pair
   after pair, into one accumulator. */
template <int MR, int NV, int Parts>
void nn_pair_tile(const bf16_t* S, int64_t lds, const bf16_t* B, int64_t ldb, float* Y, int64_t ldy, int64_t K,
                  __mmask16 m) {
  __m512 acc[MR][NV];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t pairs = (K + 1) / 2;
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh b[NV];
    // The tile streams B from memory ahead of the hardware prefetcher: a decode step's experts get a
    // few rows each, too little work per loaded pair row to hide its latency.
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm_prefetch(reinterpret_cast<const char*>(B + (p + 16) * ldb + 32 * j), _MM_HINT_T0);
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const bf16_t* row = B + p * ldb + 32 * j;
      b[j] = as_bh(j + 1 < NV ? _mm512_loadu_si512(row) : _mm512_maskz_loadu_epi32(m, row));
    }
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      #pragma GCC unroll 2
      for (int part = 0; part < Parts; ++part) {
        int32_t pair;
        __builtin_memcpy(&pair, S + i * lds + part * (lds / 2) + 2 * p, 4);
        const __m512bh x = as_bh(_mm512_set1_epi32(pair));
        #pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], x, b[j]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      if (j + 1 < NV) {
        _mm512_storeu_ps(Y + i * ldy + 16 * j, acc[i][j]);
      } else {
        _mm512_mask_storeu_ps(Y + i * ldy + 16 * j, m, acc[i][j]);
      }
    }
}

using NnPairTileFn = void (*)(const bf16_t*, int64_t, const bf16_t*, int64_t, float*, int64_t, int64_t, __mmask16);

// kNnPairTiles<Parts>[MR - 1][NV - 1]: up to 6 rows x 64 columns, 24 accumulators.
template <int Parts>
constexpr NnPairTileFn kNnPairTiles[6][4] = {
    {nn_pair_tile<1, 1, Parts>, nn_pair_tile<1, 2, Parts>, nn_pair_tile<1, 3, Parts>, nn_pair_tile<1, 4, Parts>},
    {nn_pair_tile<2, 1, Parts>, nn_pair_tile<2, 2, Parts>, nn_pair_tile<2, 3, Parts>, nn_pair_tile<2, 4, Parts>},
    {nn_pair_tile<3, 1, Parts>, nn_pair_tile<3, 2, Parts>, nn_pair_tile<3, 3, Parts>, nn_pair_tile<3, 4, Parts>},
    {nn_pair_tile<4, 1, Parts>, nn_pair_tile<4, 2, Parts>, nn_pair_tile<4, 3, Parts>, nn_pair_tile<4, 4, Parts>},
    {nn_pair_tile<5, 1, Parts>, nn_pair_tile<5, 2, Parts>, nn_pair_tile<5, 3, Parts>, nn_pair_tile<5, 4, Parts>},
    {nn_pair_tile<6, 1, Parts>, nn_pair_tile<6, 2, Parts>, nn_pair_tile<6, 3, Parts>, nn_pair_tile<6, 4, Parts>},
};

template <int Parts>
struct NnPairTiles {
  void operator()(int64_t mr, int64_t cols, const bf16_t* S, int64_t lds, const bf16_t* B, int64_t ldb, float* Y,
                  int64_t ldy, int64_t K) const {
    const int64_t vectors = (cols + 15) / 16, left = cols - 16 * (vectors - 1);
    const __mmask16 m = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1u);
    kNnPairTiles<Parts>[mr - 1][vectors - 1](S, lds, B, ldb, Y, ldy, K, m);
  }
};

/* Y[M, n0:n1] = bf16(X[M,K]) @ B[K, n0:n1], B in pairs of k: X rounded in blocks of rows into
   scratch (zero past K, so an odd K's last pair multiplies B's unpaired value by zero), then tiles of
   6 rows x 64 columns */
void gemm_nn_bf16(const float* X, int64_t ldx, const bf16_t* B, int64_t ldb, float* Y, int64_t ldy, int64_t M,
                  int64_t n0, int64_t n1, int64_t K) {
  const int64_t kp = (K + 31) / 32 * 32;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (kp * 2)));
  bf16_t* S = scratch(mc * kp);
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<1>(X + (mb + i) * ldx, K, kp, S + i * kp);
    gemm_nn_blocked<2>(NnPairTiles<1>{}, 6, 64, S, kp, B, ldb, Y + mb * ldy, ldy, rows, n0, n1, K);
  }
}

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T, W packed in panels (kPanelColumns), X converted to Parts BF16
   parts in blocks of rows; for each block, each panel in turn is multiplied by every row of the block
   (the panel, K * 256 bytes, stays in L2 beside the block). */
template <int Parts>
void gemm_packed_parts(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy, int64_t M, int64_t n0,
                       int64_t n1, int64_t K) {
  const int64_t kp = (K + 31) / 32 * 32;
  const int64_t lds = Parts * kp;
  const int64_t panel = (K + 1) / 2 * 2 * kPanelColumns;
  const int64_t mc = min64(M, max64(kMinRows, kPackedXBlock / (lds * 2)));
  bf16_t* S = scratch(mc * lds);
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<Parts>(X + (mb + i) * ldx, K, kp, S + i * lds);
    for (int64_t n = n0; n < n1; n += kPanelColumns) {
      const int64_t cols = min64(kPanelColumns, n1 - n);
      gemm_nn_blocked<2>(NnPairTiles<Parts>{}, 6, kPanelColumns, S, lds, P + n / kPanelColumns * panel,
                         2 * kPanelColumns, Y + mb * ldy + n, ldy, rows, 0, cols, K);
    }
  }
}

void gemm_bf16_packed(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy, int64_t M, int64_t n0,
                      int64_t n1, int64_t K) {
  gemm_packed_parts<2>(X, ldx, P, Y, ldy, M, n0, n1, K);
}

void gemm_bf16_packed_fast(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy, int64_t M,
                           int64_t n0, int64_t n1, int64_t K) {
  gemm_packed_parts<1>(X, ldx, P, Y, ldy, M, n0, n1, K);
}

}  // namespace

const KernelSet& kernels_avx512bf16() {
  static const KernelSet set = [] {
    KernelSet s = kernels_avx512();
    s.name = "avx512bf16";
    s.gemm_bf16 = gemm_bf16;
    s.gemm_bf16_fast = gemm_bf16_fast;
    s.gemm_nn_bf16 = gemm_nn_bf16;
    s.gemm_bf16_packed = gemm_bf16_packed;
    s.gemm_bf16_packed_fast = gemm_bf16_packed_fast;
    return s;
  }();
  return set;
}

}  // namespace scriptorium
