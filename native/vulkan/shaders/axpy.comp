#version 450
// y[i] += a * x[i] for i < n: residual adds.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer YBuf { float Y[]; };
layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(push_constant) uniform Params {
  uint n, y_off, x_off;
  float a;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) Y[p.y_off + i] += p.a * X[p.x_off + i];
}
