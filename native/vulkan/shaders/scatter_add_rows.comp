#version 450
// y[rows[i], j] += weights[i] * x[i, j] for i < n, j < width: an expert's outputs added back to
// the rows it took, each scaled by its routing weight. rows must be distinct within one call.
// y f32 (row stride ldy); x f32 (row stride width); rows int [n]; weights f32 [n].
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer YBuf { float Y[]; };
layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(std430, binding = 2) readonly buffer RowBuf { int rows[]; };
layout(std430, binding = 3) readonly buffer WeightBuf { float weights[]; };
layout(push_constant) uniform Params {
  uint width, y_off, ldy, x_off, rows_off;
} p;

void main() {
  const uint i = gl_WorkGroupID.y;
  const uint dst = p.y_off + uint(rows[p.rows_off + i]) * p.ldy, src = p.x_off + i * p.width;
  const float w = weights[p.rows_off + i];
  for (uint j = gl_GlobalInvocationID.x; j < p.width; j += gl_NumWorkGroups.x * 256) Y[dst + j] += w * X[src + j];
}
