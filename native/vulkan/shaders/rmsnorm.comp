#version 450
// y[r, i] = x[r, i] * rsqrt(mean_i(x[r, :]^2) + eps) * w[i] for rows r: one workgroup per row.
// x, y f32 with row strides ldx, ldy (y may alias x); w bf16 [n].
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 2) buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint n, x_off, ldx, w_off, y_off, ldy;
  float eps;
} p;
#include "bf16.glsl"

shared float partial[256];

void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const uint x0 = p.x_off + row * p.ldx;
  float ss = 0.0;
  for (uint i = t; i < p.n; i += 256) ss = fma(X[x0 + i], X[x0 + i], ss);
  partial[t] = ss;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  const float r = 1.0 / sqrt(partial[0] / float(p.n) + p.eps);
  const uint y0 = p.y_off + row * p.ldy;
  for (uint i = t; i < p.n; i += 256) {
    const uint index = p.w_off + i;
    Y[y0 + i] = X[x0 + i] * r * bf16_at(W[index >> 1], index);
  }
}
