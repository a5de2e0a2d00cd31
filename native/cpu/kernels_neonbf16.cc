// NEON with BF16 dot products (BFDOT; Armv8.6 and later: Graviton 3/4, Neoverse V1/V2/N2, Apple M2
// and later): gemm_bf16_fast, gemm_nn_bf16 and the packed products; every other member is the neon
// set's, gemm_bf16 included (convert-and-FMA: exact precision keeps F32 activations for weights read
// as stored). As on avx512bf16, the packed exact product splits activations as x ~ hi + lo with
// hi = bf16(x), lo = bf16(x - hi) (~16 mantissa bits); the fast products use hi alone, one dot
// product per product. BFDOT adds each lane's two products, then that sum to the accumulator, with
// its own rounding (round to odd, subnormals flushed, unless the CPU has FEAT_EBF16 and FPCR.EBF is
// set): the outputs differ from avx512bf16's in the last bits, within the same tolerances. Compiled
// with -march=armv8.2-a+bf16; only kernels_neonbf16() is exported.
#include <arm_neon.h>

#include <new>

#include "cpu/gemm_blocking.h"
#include "cpu/kernels.h"

namespace scriptorium {

const KernelSet& kernels_neon();

namespace {

// Builtins only, no std:: inline functions (see kernels_avx2.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kXBlock = 192 << 10;  // bytes of converted X rows (hi, or hi + lo) kept in L2 per block
constexpr int64_t kMinRows = 16;        // decode batches up to this many rows read W once
constexpr int64_t kStep = 8;            // k values per BFDOT: 4 lanes of 2

// Grow-only per-thread scratch, 64-byte aligned: no allocation once a thread has seen its largest X block.
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

inline bfloat16x8_t load8(const bf16_t* p) { return vreinterpretq_bf16_u16(vld1q_u16(p)); }

// bf16(v) for 4 floats, round to nearest even (BFCVTN), as 4 raw halves.
inline uint16x4_t round4(float32x4_t v) { return vget_low_u16(vreinterpretq_u16_bf16(vcvtq_low_bf16_f32(v))); }
inline float32x4_t widen4(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }

/* row[0:Kp] = hi = bf16(x[K]) and, with Parts == 2, row[Kp:2Kp] = lo = bf16(x - hi); zero padded to
   Kp (a multiple of kStep) */
template <int Parts>
void convert_row(const float* x, int64_t K, int64_t Kp, bf16_t* row) {
  for (int64_t k = 0; k < Kp; k += 4) {
    float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const float* src = x + k;
    if (k + 4 > K) {
      for (int64_t i = 0; k + i < K; ++i) buf[i] = x[k + i];
      src = buf;
    }
    const float32x4_t v = vld1q_f32(src);
    const uint16x4_t h = round4(v);
    vst1_u16(row + k, h);
    if (Parts == 2) vst1_u16(row + Kp + k, round4(vsubq_f32(v, widen4(h))));
  }
}

// Every output of the row-major products follows one order, whatever the tile: K is walked in steps
// s of kStep (the last zero-padded); step s adds dp(hi_s, w_s) into acc[s & 1]; y = the sum of
// acc[0] + acc[1]'s lanes. Two chains per output hide BFDOT's latency, and a batched row stays
// bitwise equal to a one-row call.

/* acc[i][j] += H_i[k:k+8] . w[j] for the MR rows of H at S + i*lds */
template <int MR, int NR>
inline void dot_step(float32x4_t (&acc)[MR][NR], const bf16_t* S, int64_t lds, int64_t k, const bfloat16x8_t (&w)[NR]) {
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    const bfloat16x8_t h = load8(S + i * lds + k);
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = vbfdotq_f32(acc[i][j], h, w[j]);
  }
}

/* Y[MR, NR] = H[MR,K] @ W[NR,K]^T; row i of H at S + i*lds (zero past K), W rows j at W + j*ldw */
template <int MR, int NR>
void tile(const bf16_t* S, int64_t lds, const bf16_t* W, int64_t ldw, float* Y, int64_t ldy, int64_t K,
          WeightPrefetch<bf16_t> ahead) {
  float32x4_t acc[2][MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[0][i][j] = acc[1][i][j] = vdupq_n_f32(0.0f);
  int64_t k = 0, s = 0;
  for (; k + kStep <= K; k += kStep, ++s) {
    if (k % 32 == 0)
      for (int64_t r = 0; r < ahead.count; ++r) __builtin_prefetch(ahead.row + r * ahead.stride + k);
    bfloat16x8_t w[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) w[j] = load8(W + j * ldw + k);
    dot_step<MR, NR>(acc[s & 1], S, lds, k, w);
  }
  if (k < K) {
    bfloat16x8_t w[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      bf16_t buf[kStep] = {};
      for (int64_t i = 0; k + i < K; ++i) buf[i] = W[j * ldw + k + i];
      w[j] = load8(buf);
    }
    dot_step<MR, NR>(acc[s & 1], S, lds, k, w);
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = vaddvq_f32(vaddq_f32(acc[0][i][j], acc[1][i][j]));
}

using TileFn = void (*)(const bf16_t*, int64_t, const bf16_t*, int64_t, float*, int64_t, int64_t,
                       WeightPrefetch<bf16_t>);

// kTiles[MR - 1][NR - 1]: a 3x4 tile holds 24 accumulators, 4 W and 1 X vectors of the 32 registers.
constexpr TileFn kTiles[4][4] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
    {tile<4, 1>, nullptr, nullptr, nullptr},
};

struct Tiles {
  void operator()(int64_t mr, int64_t nr, const bf16_t* S, int64_t lds, const bf16_t* W, int64_t ldw, float* Y,
                  int64_t ldy, int64_t K, WeightPrefetch<bf16_t> ahead) const {
    kTiles[mr - 1][nr - 1](S, lds, W, ldw, Y, ldy, K, ahead);
  }
};

/* Y[M, n0:n1] = bf16(X[M,K]) @ W[n0:n1,K]^T: each X block (mc rows) rounded into scratch once, then
   multiplied by all of W[n0:n1]. Up to 4 rows (decode) W is read one row at a time, front to back,
   serving every X row from L1; more rows take 3x4 tiles that reuse each W block from L1. */
void gemm_bf16_fast(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M, int64_t n0,
                    int64_t n1, int64_t K) {
  const int64_t kp = (K + kStep - 1) / kStep * kStep;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (kp * 2)));
  bf16_t* S = scratch(mc * kp);
  const bool stream = M <= 4;
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<1>(X + (mb + i) * ldx, K, kp, S + i * kp);
    const GemmBlocking blocking{stream ? 4 : 3, stream ? 1 : 4, rows, max64(1, n1 - n0), !stream};
    gemm_blocked(Tiles{}, blocking, S, kp, W, K, Y + mb * ldy, ldy, rows, n0, n1, K);
  }
}

/* Y[MR, cols] = (H (+ L))[MR,K] @ B[K, cols] with H bf16 rows (row i at S + i*lds, zero past K; with
   Parts == 2, L at S + i*lds + lds/2) and B in pairs of k (pair p, column n at B + p*ldb + 2n);
   cols <= 4 * NV. Each output adds dp(H pair) then dp(L pair), pair after pair, into one accumulator
   lane. Columns past `cols` in the last vector are computed from B's padding and not stored. */
template <int MR, int NV, int Parts>
void nn_pair_tile(const bf16_t* S, int64_t lds, const bf16_t* B, int64_t ldb, float* Y, int64_t ldy, int64_t K,
                  int64_t cols) {
  float32x4_t acc[MR][NV];
  #pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  const int64_t pairs = (K + 1) / 2;
  const int64_t tail = cols - 4 * (NV - 1);  // columns in the last vector, 1 to 4
  for (int64_t p = 0; p < pairs; ++p) {
    bfloat16x8_t b[NV];
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const bf16_t* row = B + p * ldb + 8 * j;
      if (j + 1 < NV || tail == 4) {
        b[j] = load8(row);
      } else {
        bf16_t buf[8] = {};
        for (int64_t i = 0; i < 2 * tail; ++i) buf[i] = row[i];
        b[j] = load8(buf);
      }
    }
    #pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      #pragma GCC unroll 2
      for (int part = 0; part < Parts; ++part) {
        uint32_t pair;
        __builtin_memcpy(&pair, S + i * lds + part * (lds / 2) + 2 * p, 4);
        const bfloat16x8_t x = vreinterpretq_bf16_u32(vdupq_n_u32(pair));
        #pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = vbfdotq_f32(acc[i][j], x, b[j]);
      }
    }
  }
  #pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      if (j + 1 < NV || tail == 4) {
        vst1q_f32(Y + i * ldy + 4 * j, acc[i][j]);
      } else {
        float out[4];
        vst1q_f32(out, acc[i][j]);
        for (int64_t c = 0; c < tail; ++c) Y[i * ldy + 4 * j + c] = out[c];
      }
    }
}

using NnPairTileFn = void (*)(const bf16_t*, int64_t, const bf16_t*, int64_t, float*, int64_t, int64_t, int64_t);

// kNnPairTiles<Parts>[MR - 1][NV - 1]: up to 4 rows x 16 columns, 16 accumulators beside 4 B vectors.
template <int Parts>
constexpr NnPairTileFn kNnPairTiles[4][4] = {
    {nn_pair_tile<1, 1, Parts>, nn_pair_tile<1, 2, Parts>, nn_pair_tile<1, 3, Parts>, nn_pair_tile<1, 4, Parts>},
    {nn_pair_tile<2, 1, Parts>, nn_pair_tile<2, 2, Parts>, nn_pair_tile<2, 3, Parts>, nn_pair_tile<2, 4, Parts>},
    {nn_pair_tile<3, 1, Parts>, nn_pair_tile<3, 2, Parts>, nn_pair_tile<3, 3, Parts>, nn_pair_tile<3, 4, Parts>},
    {nn_pair_tile<4, 1, Parts>, nn_pair_tile<4, 2, Parts>, nn_pair_tile<4, 3, Parts>, nn_pair_tile<4, 4, Parts>},
};

template <int Parts>
struct NnPairTiles {
  void operator()(int64_t mr, int64_t cols, const bf16_t* S, int64_t lds, const bf16_t* B, int64_t ldb, float* Y,
                  int64_t ldy, int64_t K) const {
    kNnPairTiles<Parts>[mr - 1][(cols + 3) / 4 - 1](S, lds, B, ldb, Y, ldy, K, cols);
  }
};

/* Y[M, n0:n1] = bf16(X[M,K]) @ B[K, n0:n1], B in pairs of k: X rounded in blocks of rows into scratch
   (zero past K, so an odd K's last pair multiplies B's unpaired value by zero), then tiles of 4 rows x
   16 columns */
void gemm_nn_bf16(const float* X, int64_t ldx, const bf16_t* B, int64_t ldb, float* Y, int64_t ldy, int64_t M,
                  int64_t n0, int64_t n1, int64_t K) {
  const int64_t kp = (K + kStep - 1) / kStep * kStep;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (kp * 2)));
  bf16_t* S = scratch(mc * kp);
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<1>(X + (mb + i) * ldx, K, kp, S + i * kp);
    gemm_nn_blocked<2>(NnPairTiles<1>{}, 4, 16, S, kp, B, ldb, Y + mb * ldy, ldy, rows, n0, n1, K);
  }
}

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T, W packed in panels (kPanelColumns), X converted to Parts BF16
   parts in blocks of rows; for each block, each panel in turn is multiplied by every row of the block
   (the panel, K * 256 bytes, stays in L2 beside the block). */
template <int Parts>
void gemm_packed_parts(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy, int64_t M, int64_t n0,
                       int64_t n1, int64_t K) {
  const int64_t kp = (K + kStep - 1) / kStep * kStep;
  const int64_t lds = Parts * kp;
  const int64_t panel = (K + 1) / 2 * 2 * kPanelColumns;
  const int64_t mc = min64(M, max64(kMinRows, kXBlock / (lds * 2)));
  bf16_t* S = scratch(mc * lds);
  for (int64_t mb = 0; mb < M; mb += mc) {
    const int64_t rows = min64(mc, M - mb);
    for (int64_t i = 0; i < rows; ++i) convert_row<Parts>(X + (mb + i) * ldx, K, kp, S + i * lds);
    for (int64_t n = n0; n < n1; n += kPanelColumns) {
      const int64_t cols = min64(kPanelColumns, n1 - n);
      gemm_nn_blocked<2>(NnPairTiles<Parts>{}, 4, 16, S, lds, P + n / kPanelColumns * panel, 2 * kPanelColumns,
                         Y + mb * ldy + n, ldy, rows, 0, cols, K);
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

const KernelSet& kernels_neonbf16() {
  static const KernelSet set = [] {
    KernelSet s = kernels_neon();
    s.name = "neonbf16";
    s.gemm_bf16_fast = gemm_bf16_fast;
    s.gemm_nn_bf16 = gemm_nn_bf16;
    s.gemm_bf16_packed = gemm_bf16_packed;
    s.gemm_bf16_packed_fast = gemm_bf16_packed_fast;
    return s;
  }();
  return set;
}

}  // namespace scriptorium
