// AVX-512 VNNI int8 products on Tiles16 weights (quant_int8.h). Exact form: each F32 activation row
// is rounded to integers q in [-32639, 32639] with one scale per row (max|x| / 32639), split into two
// signed byte digits q = 256 hi + lo, and vpdpbusd multiplies one 64-byte load of weights (4 columns
// of 16 rows, stored as w + 128) by a broadcast of 4 digits, summing into the 16 rows' int32 lanes:
// two instructions per 64 weights and activation row, no widening. Fast form: one signed byte digit
// per activation, q in [-127, 127], with one scale per row and weight group (max|x| / 127 over the
// group's columns), so one instruction per 64 weights and row. The offset adds 128 * sum(q) to each
// sum; each lane starts from minus that. Lanes wrap modulo 2^32, exactly, and the finished sum of a
// span of at most 256 columns, |sum w q| <= 256 * 127 * 32639 < 2^31, fits: (256 hi + lo) is then
// converted to F32 once per span and 16 rows and scaled by the 16 rows' group scales (in the fast
// form times the activation row's group scale); the exact form's row scale is applied once at the
// end. Integer sums make every Y[m, n] bitwise the same whatever M, n0 and n1 are.
// Compiled with the AVX-512 flags plus -mavx512vnni; only quant_avx512vnni() is exported.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <new>

#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx512.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// The largest |q|: two digits, both int8 (exact form), or one (fast form).
template <int Digits>
constexpr int32_t kLevels = Digits == 2 ? 127 * 256 + 127 : 127;
constexpr int64_t kSpan = 256;                // columns summed in int32 before converting
constexpr int64_t kRowBlock = 64;             // activation rows quantised at once
constexpr int64_t kBlockTiles = 4;            // 64 weight rows kept in L2 while every row tile reads them
constexpr int64_t kMaxRowTile = 8;
// From 2 rows a tile takes long enough per 64-byte line that the hardware prefetcher falls behind
// memory's latency: such tiles prefetch 8 KB ahead, split over their column tiles' streams. Against
// 2 KB a stream from 3 rows, alternating in one process, a 256 MiB matrix read 14-42% faster at 4
// and 6 rows in the fast form (one stream), -6 to +19% at 2 and 8, and 1-24% at 2 to 8 rows in the
// exact form; at 1 row, where 4 streams each take a line per instruction, prefetching measured slower.
constexpr int64_t kPrefetchRows = 2;
constexpr int64_t kPrefetchAhead = 8192;

inline __mmask16 mask16(int64_t n) { return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }

// The spans of a row: spans never cross a scale group, so groups of 64 are one span each.
struct Spans {
  int64_t K, group, count;
};

Spans spans_of(const Int8Weights& w) {
  const int64_t per_group = (min64(w.group, w.K) + kSpan - 1) / kSpan, last = w.K - (w.groups - 1) * w.group;
  return Spans{w.K, w.group, (w.groups - 1) * per_group + (last + kSpan - 1) / kSpan};
}

// The quantised activation rows of one row block. The digits of every row for 4 columns lie
// together, so that a tile reaches all its rows' digits from one pointer at constant offsets.
struct QuantRows {
  int64_t count;             // rows in the block
  int8_t* digits;            // [ceil(K / 4), count, 4 * Digits]: 4 hi digits, then (exact form) 4 lo digits; zero padded
  int32_t* start;            // [count, spans]: -128 * sum(q) over the span, each lane's first value
  float* scale;              // exact form [count], one per row; fast form [count, groups]
};

// Writes q's digits for columns [k, k + 16) of row i (q zero past the span's end `s1`).
template <int Digits>
void store_digits(__m512i q, int64_t k, int64_t s1, const QuantRows& rows, int64_t i) {
  alignas(16) int8_t hi[16], lo[16];  // masked-off columns hold 0: the padding digits
  if (Digits == 2) {
    const __m512i low = _mm512_srai_epi32(_mm512_slli_epi32(q, 24), 24);  // low byte, signed
    _mm_store_si128(reinterpret_cast<__m128i*>(lo), _mm512_cvtepi32_epi8(low));
    q = _mm512_srai_epi32(_mm512_sub_epi32(q, low), 8);
  }
  _mm_store_si128(reinterpret_cast<__m128i*>(hi), _mm512_cvtepi32_epi8(q));
  for (int64_t c = 0; c < 16 && k + c < s1; c += 4) {
    int8_t* d = rows.digits + (((k + c) / 4) * rows.count + i) * 4 * Digits;
    __builtin_memcpy(d, hi + c, 4);
    if (Digits == 2) __builtin_memcpy(d + 4, lo + c, 4);
  }
}

// max|x[k0:k1)| (lanes past k1 read as 0), and whether every value there is finite.
inline float abs_max(const float* x, int64_t k0, int64_t k1, bool* finite) {
  __m512 top = _mm512_setzero_ps();
  __mmask16 nan = 0;
  for (int64_t k = k0; k < k1; k += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(mask16(k1 - k), x + k);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    top = _mm512_max_ps(top, _mm512_abs_ps(v));
  }
  const float amax = _mm512_reduce_max_ps(top);
  *finite = nan == 0 && amax <= 3.40282347e38f;
  return amax;
}

// Row i of `rows` from x[0:K]: digits, span starts and scales (0 where the values are all zero; NaN
// for a row holding a NaN or an infinity, so that its products are NaN as with F32 activations).
// The exact form scales the row as a whole, the fast form each group.
template <int Digits>
void quantize_row(const float* x, const Spans& spans, const QuantRows& rows, int64_t i) {
  const int64_t K = spans.K, groups = (K + spans.group - 1) / spans.group;
  bool row_finite = true;
  float amax = 0.f;
  if (Digits == 2) {
    amax = abs_max(x, 0, K, &row_finite);
    rows.scale[i] = row_finite ? amax / kLevels<Digits> : __builtin_nanf("");
  }
  const __m512i limit = _mm512_set1_epi32(kLevels<Digits>);
  int32_t* start = rows.start + i * spans.count;
  for (int64_t g0 = 0, g = 0, s = 0; g0 < K; g0 += spans.group, ++g) {
    const int64_t g1 = min64(K, g0 + spans.group);
    bool finite = row_finite;
    if (Digits == 1) {
      amax = abs_max(x, g0, g1, &finite);
      row_finite = row_finite && finite;
      rows.scale[i * groups + g] = amax / kLevels<Digits>;
    }
    const __m512 inverse = _mm512_set1_ps(finite && amax > 0.f ? kLevels<Digits> / amax : 0.f);
    for (int64_t s0 = g0; s0 < g1; s0 += kSpan, ++s) {
      const int64_t s1 = min64(g1, s0 + kSpan);
      __m512i sum = _mm512_setzero_si512();
      for (int64_t k = s0; k < s1; k += 16) {
        const __mmask16 m = mask16(s1 - k);
        __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + k), inverse));
        q = _mm512_max_epi32(_mm512_min_epi32(q, limit), _mm512_sub_epi32(_mm512_setzero_si512(), limit));
        store_digits<Digits>(q, k, s1, rows, i);
        sum = _mm512_add_epi32(sum, q);
      }
      start[s] = -128 * _mm512_reduce_add_epi32(sum);
    }
  }
  // The fast form learns the row's finiteness group by group: a non-finite value anywhere makes
  // every group's scale NaN.
  if (Digits == 1 && !row_finite)
    for (int64_t g = 0; g < groups; ++g) rows.scale[i * groups + g] = __builtin_nanf("");
}

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

/* Y[row0 + 0:MR, 16 t0 : 16 (t0 + NT)] = Xq[0:MR, K] @ W[16 t0 : 16 (t0 + NT), K]^T, stored only in
   columns [n0, n1); rows is the row block, row0 its first row here */
template <int Digits, int MR, int NT>
void tile(const QuantRows& rows, int64_t row0, const Spans& spans, const Int8Weights& w, int64_t t0, float* Y,
          int64_t ldy, int64_t n0, int64_t n1) {
  const int64_t tile_bytes = 16 * ((spans.K + 3) / 4 * 4), digit_stride = 4 * Digits * rows.count;
  const int8_t* W = w.q + t0 * tile_bytes;
  const float* S = w.scales + t0 * 16 * w.groups;
  const int8_t* digits = rows.digits + 4 * Digits * row0;
  const int32_t* start = rows.start + row0 * spans.count;
  __m512 acc[MR][NT];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_setzero_ps();
  for (int64_t g0 = 0, g = 0, s = 0; g0 < spans.K; g0 += spans.group, ++g) {
    const int64_t g1 = min64(spans.K, g0 + spans.group);
    for (int64_t s0 = g0; s0 < g1; s0 += kSpan, ++s) {
      const int64_t s1 = min64(g1, s0 + kSpan);
      // Digits == 2: high takes the hi digits from zero, low the lo digits from the span's start;
      // Digits == 1: low takes the only digit.
      __m512i high[MR][NT], low[MR][NT];
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i)
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) high[i][t] = _mm512_setzero_si512(), low[i][t] = _mm512_set1_epi32(start[i * spans.count + s]);
      // One step per 4 columns: 64 weight bytes of each column tile, 4 digit bytes of each row and digit.
      const int8_t* w4 = W + s0 * 16;
      const int8_t* d4 = digits + s0 / 4 * digit_stride;
      for (int64_t k = s0; k < s1; k += 4, w4 += 64, d4 += digit_stride) {
        __m512i wt[NT];
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          if (MR >= kPrefetchRows) _mm_prefetch(reinterpret_cast<const char*>(w4 + t * tile_bytes + kPrefetchAhead / NT), _MM_HINT_T0);
          wt[t] = _mm512_loadu_si512(w4 + t * tile_bytes);
        }
        #pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          const __m512i first = broadcast4(d4 + 4 * Digits * i);
          if (Digits == 2) {
            const __m512i second = broadcast4(d4 + 8 * i + 4);
            #pragma GCC unroll 8
            for (int t = 0; t < NT; ++t) {
              high[i][t] = _mm512_dpbusd_epi32(high[i][t], wt[t], first);
              low[i][t] = _mm512_dpbusd_epi32(low[i][t], wt[t], second);
            }
          } else {
            #pragma GCC unroll 8
            for (int t = 0; t < NT; ++t) low[i][t] = _mm512_dpbusd_epi32(low[i][t], wt[t], first);
          }
        }
      }
      #pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const __m512 scale = _mm512_loadu_ps(S + (t * w.groups + g) * 16);
        #pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          if (Digits == 2) {
            const __m512i sum = _mm512_add_epi32(_mm512_slli_epi32(high[i][t], 8), low[i][t]);
            acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[i][t]);
          } else {
            const __m512 both = _mm512_mul_ps(scale, _mm512_set1_ps(rows.scale[(row0 + i) * w.groups + g]));
            acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(low[i][t]), both, acc[i][t]);
          }
        }
      }
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) {
    const int64_t c0 = 16 * (t0 + t), first = max64(n0, c0) - c0, end = min64(n1, c0 + 16) - c0;
    const __mmask16 m = static_cast<__mmask16>(mask16(end) & ~mask16(first));
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      _mm512_mask_storeu_ps(Y + (row0 + i) * ldy + c0, m,
                            Digits == 2 ? _mm512_mul_ps(acc[i][t], _mm512_set1_ps(rows.scale[row0 + i])) : acc[i][t]);
  }
}

using TileFn = void (*)(const QuantRows&, int64_t, const Spans&, const Int8Weights&, int64_t, float*, int64_t, int64_t,
                        int64_t);

// kTiles<Digits>[MR - 1][NT - 1]: (1 + Digits) * MR * NT accumulators, NT weight vectors and the
// broadcasts fit the 32 registers; kTileCount<Digits>[MR - 1] is the widest taken, and kBlockTiles
// is a multiple of each. The fast form takes one column tile from 2 rows on: its products are
// cheap enough that the stream of weights from memory bounds it, and one stream (a tile's rows one
// after another) read 17-22% faster than two or four side by side at 2 to 4 rows in two of three
// runs of both in one process, and as fast in the third.
template <int Digits>
constexpr TileFn kTiles[kMaxRowTile][4] = {
    {tile<Digits, 1, 1>, tile<Digits, 1, 2>, tile<Digits, 1, 3>, tile<Digits, 1, 4>},
    {tile<Digits, 2, 1>, tile<Digits, 2, 2>, tile<Digits, 2, 3>, tile<Digits, 2, 4>},
    {tile<Digits, 3, 1>, tile<Digits, 3, 2>},
    {tile<Digits, 4, 1>, tile<Digits, 4, 2>},
    {tile<Digits, 5, 1>},
    {tile<Digits, 6, 1>},
    {tile<Digits, 7, 1>},
    {tile<Digits, 8, 1>},
};
template <int Digits>
constexpr int64_t kTileCount[kMaxRowTile] = {4, 4, 2, 2, 1, 1, 1, 1};
template <>
constexpr int64_t kTileCount<1>[kMaxRowTile] = {4, 1, 1, 1, 1, 1, 1, 1};

/* Y[M, n0:n1] = X[M, K] @ W[n0:n1, K]^T, W in Tiles16, activations in Digits bytes */
template <int Digits>
void gemm_digits(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M, int64_t n0,
                 int64_t n1) {
  if (M < 1 || n0 >= n1) return;
  const Spans spans = spans_of(W);
  const int64_t Kp = (W.K + 3) / 4 * 4, block_rows = min64(M, kRowBlock);
  const int64_t scales = Digits == 2 ? 1 : W.groups;
  // ::operator new (which throws std::bad_alloc itself), not std::vector: this file may define no
  // inline copy built with its ISA flags. One block: scales, span starts, then the digits.
  void* scratch = ::operator new((sizeof(float) * scales + sizeof(int32_t) * spans.count + Digits * Kp) * block_rows);
  QuantRows rows{block_rows, nullptr, nullptr, static_cast<float*>(scratch)};
  rows.start = reinterpret_cast<int32_t*>(rows.scale + scales * block_rows);
  rows.digits = reinterpret_cast<int8_t*>(rows.start + spans.count * block_rows);
  const int64_t first_tile = n0 / 16, end_tile = (n1 + 15) / 16;
  for (int64_t r0 = 0; r0 < M; r0 += kRowBlock) {
    const int64_t mb = min64(kRowBlock, M - r0);
    for (int64_t i = 0; i < mb; ++i) quantize_row<Digits>(X + (r0 + i) * ldx, spans, rows, i);
    float* Yb = Y + r0 * ldy;
    for (int64_t b0 = first_tile; b0 < end_tile; b0 += kBlockTiles) {
      const int64_t b1 = min64(end_tile, b0 + kBlockTiles);
      for (int64_t i0 = 0; i0 < mb; i0 += kMaxRowTile) {
        const int64_t mr = min64(kMaxRowTile, mb - i0);
        for (int64_t t = b0; t < b1; t += kTileCount<Digits>[mr - 1]) {
          const int64_t nt = min64(kTileCount<Digits>[mr - 1], b1 - t);
          kTiles<Digits>[mr - 1][nt - 1](rows, i0, spans, W, t, Yb, ldy, n0, n1);
        }
      }
    }
  }
  ::operator delete(scratch);
}

// gemm_int8 takes two digits per activation, gemm_int8_fast one.
constexpr QuantKernelSet kSet = {"avx512vnni", kLevels<2>, Int8Layout::Tiles16, gemm_digits<2>, gemm_digits<1>};

}  // namespace

const QuantKernelSet& quant_avx512vnni() { return kSet; }

}  // namespace scriptorium
