#version 450
// Y[M, N] = X[M, K] @ W[N, K]^T in fast precision, on the matrix units through
// GL_NV_cooperative_matrix: 64x64 output tiles per workgroup of four 32-wide subgroups (each 32x32,
// 2x2 fragments of 16x16x16), K in steps of 32 through shared memory, FP32 accumulation. Fragments
// take FP16: each activation is rounded once to FP16 (11 significant bits, clamped to +-65504 so
// that a large one stays finite), one product per fragment pair; each BF16 weight converts to FP16
// exactly for 2^-14 <= |w| < 65504 (smaller ones lose low bits). Edge tiles go through shared
// memory so nothing outside Y is written.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint M, N, K, x_off, ldx, w_off, y_off, ldy;
} p;
#include "bf16.glsl"

const uint BM = 64, BN = 64, BK = 32;
shared float16_t xs[BM * BK], ws[BN * BK];  // row r, column c at r * BK + c
shared float ys[BM * BN];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sm = (gl_SubgroupID / 2) * 32, sn = (gl_SubgroupID % 2) * 32;  // this subgroup's 32x32
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 2; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    for (uint e = tid; e < BM * BK; e += 128) {
      const uint r = e / BK, k = k0 + e % BK;
      const uint m = m0 + r, n = n0 + r;
      const float x = (m < p.M && k < p.K) ? X[p.x_off + m * p.ldx + k] : 0.0;
      xs[e] = float16_t(clamp(x, -65504.0, 65504.0));
      float w = 0.0;
      if (n < p.N && k < p.K) {
        const uint index = p.w_off + n * p.K + k;
        w = bf16_at(W[index >> 1], index);
      }
      ws[e] = float16_t(w);
    }
    barrier();
    for (uint kk = 0; kk < BK; kk += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> x[2], w[2];
      for (uint i = 0; i < 2; ++i) coopMatLoadNV(x[i], xs, (sm + 16 * i) * BK + kk, BK, false);
      // W's rows are B's columns: the K x 16 fragment read column-major from the [n][k] tile.
      for (uint j = 0; j < 2; ++j) coopMatLoadNV(w[j], ws, (sn + 16 * j) * BK + kk, BK, true);
      for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAddNV(x[i], w[j], acc[i][j]);
    }
    barrier();
  }
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 2; ++j) coopMatStoreNV(acc[i][j], ys, (sm + 16 * i) * BN + sn + 16 * j, BN, false);
  barrier();
  for (uint e = tid; e < BM * BN; e += 128) {
    const uint m = m0 + e / BN, n = n0 + e % BN;
    if (m < p.M && n < p.N) Y[p.y_off + m * p.ldy + n] = ys[e];
  }
}
