// NEON int8 products with dot products (SDOT, FEAT_DotProd: Armv8.4 and most Armv8.2 server cores:
// Graviton 2/3/4, Neoverse N1/V1/V2, Apple M1 and later) on Rows weights (quant_int8.h). As the
// AVX-512 VNNI set does, the exact form rounds each F32 activation row to integers q in
// [-32639, 32639] with one scale per row (max|x| / 32639) and splits them into two signed byte digits
// q = 256 hi + lo; SDOT multiplies 16 weights of a row by 16 digits into 4 int32 lanes, once for the
// hi digits and once for the lo ones. The fast form rounds each activation to one signed byte in
// [-127, 127] with one scale per row and weight group (max|x| / 127 over the group) and runs one
// SDOT. A span of at most 256 columns inside one scale group keeps every lane's sum exact in int32
// (|256 hi + lo| sums at most 64 products of |q| <= 32639 and |w| <= 127 per lane, under 2^31); each
// span's lanes are converted to F32 once and scaled by the weight row's group scale (in the fast form
// times the activation row's), and the exact form's row scale is applied at the end. Each output sums
// its spans in k order into the same lanes whatever the tile, so Y[m, n] is bitwise the same whatever
// M, n0 and n1 are.
// Compiled with -march=armv8.2-a+dotprod; only quant_neondot() is exported.
#include <arm_neon.h>

#include <new>

#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx2.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// The largest |q|: two digits, both int8 (exact form), or one (fast form).
template <int Digits>
constexpr int32_t kLevels = Digits == 2 ? 127 * 256 + 127 : 127;
constexpr int64_t kSpan = 256;                // columns summed in int32 before converting
constexpr int64_t kStep = 16;                 // columns per SDOT
constexpr int kTileRows = 4, kTileCols = 4;   // 16 F32 sums and 2 x 16 int32 lanes of the 32 registers

// Grow-only per-thread scratch, 64-byte aligned: no allocation once a thread has seen its largest rows.
int8_t* scratch(int64_t bytes) {
  thread_local struct Buffer {
    int8_t* p = nullptr;
    int64_t n = 0;
    ~Buffer() { ::operator delete(p, std::align_val_t(64)); }
  } buf;
  if (buf.n < bytes) {
    ::operator delete(buf.p, std::align_val_t(64));
    buf.p = static_cast<int8_t*>(::operator new(bytes, std::align_val_t(64)));
    buf.n = bytes;
  }
  return buf.p;
}

// The quantised activation rows: row i's digits at digits + i * Digits * Kp (the exact form's hi
// digits, then Kp after them its lo digits), zero past K (Kp: K rounded up to kStep); scale[i] (exact
// form) or scale[i * groups + g] (fast form) is max|x| / kLevels over the row or group (0 for all
// zeros, NaN for a row holding a NaN or an infinity, whose products are then NaN as with F32
// activations).
struct QuantRows {
  int64_t Kp;
  int8_t* digits;
  float* scale;
};

// max|x[k0:k1)|
inline float abs_max(const float* x, int64_t k0, int64_t k1) {
  float top = 0.f;
  for (int64_t k = k0; k < k1; ++k) top = __builtin_fmaxf(top, __builtin_fabsf(x[k]));
  return top;
}

template <int Digits>
void quantize_row(const float* x, const Int8Weights& W, const QuantRows& rows, int64_t i) {
  const int64_t K = W.K;
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) finite = finite && x[k] - x[k] == 0.f;  // false for NaN and infinities
  const int32x4_t limit = vdupq_n_s32(kLevels<Digits>);
  int8_t* hi = rows.digits + i * Digits * rows.Kp;
  int8_t* lo = hi + rows.Kp;
  // The exact form scales the row as one group. The last group's digits run on to Kp (zeros).
  const int64_t group = Digits == 2 ? K : W.group;
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += group, ++g) {
    const int64_t end = min64(K, g0 + group), g1 = end == K ? rows.Kp : end;
    const float top = abs_max(x, g0, end);
    float* scale = Digits == 2 ? rows.scale + i : rows.scale + i * W.groups + g;
    *scale = finite ? top / kLevels<Digits> : __builtin_nanf("");
    const float32x4_t inverse = vdupq_n_f32(finite && top > 0.f ? kLevels<Digits> / top : 0.f);
    for (int64_t k = g0; k < g1; k += 4) {
      float buf[4] = {0.f, 0.f, 0.f, 0.f};
      for (int64_t c = 0; c < 4 && k + c < K; ++c) buf[c] = x[k + c];
      int32x4_t q = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(buf), inverse));  // round to nearest even
      q = vmaxq_s32(vminq_s32(q, limit), vnegq_s32(limit));
      int32_t h4[4], l4[4];
      if (Digits == 2) {
        const int32x4_t low = vshrq_n_s32(vshlq_n_s32(q, 24), 24);  // the low byte, signed
        vst1q_s32(l4, low);
        q = vshrq_n_s32(vsubq_s32(q, low), 8);
      }
      vst1q_s32(h4, q);
      for (int c = 0; c < 4; ++c) {
        hi[k + c] = static_cast<int8_t>(h4[c]);
        if (Digits == 2) lo[k + c] = static_cast<int8_t>(l4[c]);
      }
    }
  }
}

/* Y[MR, NR] = Xq[MR,K] @ (q * group scale)[NR,K]^T for quantised rows r0.. and weight rows n0.. */
template <int Digits, int MR, int NR>
void tile(const QuantRows& rows, int64_t r0, const Int8Weights& W, int64_t n0, float* Y, int64_t ldy) {
  const int64_t K = W.K;
  float32x4_t acc[MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.f);
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += W.group, ++g) {
    const int64_t g1 = min64(K, g0 + W.group);
    for (int64_t s0 = g0; s0 < g1; s0 += kSpan) {
      const int64_t s1 = min64(g1, s0 + kSpan);
      int32x4_t hi[MR][NR], lo[MR][NR];  // the fast form's one digit goes to hi
      #pragma GCC unroll 4
      for (int i = 0; i < MR; ++i)
        #pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) hi[i][j] = lo[i][j] = vdupq_n_s32(0);
      for (int64_t k = s0; k < s1; k += kStep) {
        int8x16_t w[NR];
        #pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) {
          const int8_t* row = W.q + (n0 + j) * K + k;
          if (k + kStep <= K) {
            w[j] = vld1q_s8(row);
          } else {  // the row's last columns: nothing read past its end (the digits there are 0)
            int8_t buf[kStep] = {};
            for (int64_t c = 0; k + c < K; ++c) buf[c] = row[c];
            w[j] = vld1q_s8(buf);
          }
        }
        #pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const int8_t* digits = rows.digits + (r0 + i) * Digits * rows.Kp + k;
          const int8x16_t h = vld1q_s8(digits);
          #pragma GCC unroll 4
          for (int j = 0; j < NR; ++j) hi[i][j] = vdotq_s32(hi[i][j], h, w[j]);
          if (Digits == 2) {
            const int8x16_t l = vld1q_s8(digits + rows.Kp);
            #pragma GCC unroll 4
            for (int j = 0; j < NR; ++j) lo[i][j] = vdotq_s32(lo[i][j], l, w[j]);
          }
        }
      }
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        const float weight_scale = W.scales[(n0 + j) * W.groups + g];
        #pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          if (Digits == 2) {
            acc[i][j] = vfmaq_f32(acc[i][j], vcvtq_f32_s32(vmlaq_n_s32(lo[i][j], hi[i][j], 256)), vdupq_n_f32(weight_scale));
          } else {
            const float scale = weight_scale * rows.scale[(r0 + i) * W.groups + g];
            acc[i][j] = vfmaq_f32(acc[i][j], vcvtq_f32_s32(hi[i][j]), vdupq_n_f32(scale));
          }
        }
      }
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = Digits == 2 ? vaddvq_f32(acc[i][j]) * rows.scale[r0 + i] : vaddvq_f32(acc[i][j]);
}

using TileFn = void (*)(const QuantRows&, int64_t, const Int8Weights&, int64_t, float*, int64_t);

// kTiles<Digits>[MR - 1][NR - 1].
template <int Digits>
constexpr TileFn kTiles[kTileRows][kTileCols] = {
    {tile<Digits, 1, 1>, tile<Digits, 1, 2>, tile<Digits, 1, 3>, tile<Digits, 1, 4>},
    {tile<Digits, 2, 1>, tile<Digits, 2, 2>, tile<Digits, 2, 3>, tile<Digits, 2, 4>},
    {tile<Digits, 3, 1>, tile<Digits, 3, 2>, tile<Digits, 3, 3>, tile<Digits, 3, 4>},
    {tile<Digits, 4, 1>, tile<Digits, 4, 2>, tile<Digits, 4, 3>, tile<Digits, 4, 4>},
};

/* Y[M, n0:n1] = X[M,K] @ (q * scale)[n0:n1,K]^T: every row quantised once into scratch, then tiles
   of 4 rows x 4 weight rows */
template <int Digits>
void gemm_digits(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M, int64_t n0,
                 int64_t n1) {
  const int64_t Kp = (W.K + kStep - 1) / kStep * kStep, scales = Digits == 2 ? 1 : W.groups;
  int8_t* memory = scratch(M * Digits * Kp + M * scales * static_cast<int64_t>(sizeof(float)));
  const QuantRows rows{Kp, memory, reinterpret_cast<float*>(memory + M * Digits * Kp)};
  for (int64_t m = 0; m < M; ++m) quantize_row<Digits>(X + m * ldx, W, rows, m);
  for (int64_t n = n0; n < n1; n += kTileCols) {
    const int64_t nr = min64(kTileCols, n1 - n);
    for (int64_t m = 0; m < M; m += kTileRows) {
      const int64_t mr = min64(kTileRows, M - m);
      kTiles<Digits>[mr - 1][nr - 1](rows, m, W, n, Y + m * ldy + n, ldy);
    }
  }
}

// gemm_int8 takes two digits per activation, gemm_int8_fast one.
constexpr QuantKernelSet kSet = {"neondot", kLevels<2>, Int8Layout::Rows, gemm_digits<2>, gemm_digits<1>};

}  // namespace

const QuantKernelSet& quant_neondot() { return kSet; }

}  // namespace scriptorium
