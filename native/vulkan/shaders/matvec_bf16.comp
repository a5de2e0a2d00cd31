#version 450
// Y[M, N] = X[M, K] @ W[N, K]^T for small M (decode steps, the vocabulary head): one invocation per
// output element, a plain dot product with no shared memory and no barriers; the M rows of one W row
// run side by side (workgroup row y = m), so W is read from memory about once. Same operands and
// parameters as matmul_bf16.comp (round_x included).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint M, N, K, x_off, ldx, w_off, y_off, ldy, round_x;
} p;
#include "bf16.glsl"

void main() {
  const uint n = gl_GlobalInvocationID.x, m = gl_GlobalInvocationID.y;
  if (n >= p.N || m >= p.M) return;
  const uint w0 = p.w_off + n * p.K, x0 = p.x_off + m * p.ldx;
  float acc = 0.0;
  for (uint k = 0; k < p.K; ++k) {
    const uint index = w0 + k;
    const float x = X[x0 + k];
    acc = fma(p.round_x != 0u ? bf16_round(x) : x, bf16_at(W[index >> 1], index), acc);
  }
  Y[p.y_off + m * p.ldy + n] = acc;
}
