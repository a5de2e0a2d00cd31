#version 450
// out[i, j] = x[rows[i], j] for i < n, j < width: the rows an expert takes, gathered contiguously.
// x f32 (row stride ldx); rows int [n]; out f32 (row stride width).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer RowBuf { int rows[]; };
layout(std430, binding = 2) writeonly buffer OutBuf { float O[]; };
layout(push_constant) uniform Params {
  uint width, x_off, ldx, rows_off, out_off;
} p;

void main() {
  const uint i = gl_WorkGroupID.y;
  const uint src = p.x_off + uint(rows[p.rows_off + i]) * p.ldx, dst = p.out_off + i * p.width;
  for (uint j = gl_GlobalInvocationID.x; j < p.width; j += gl_NumWorkGroups.x * 256) O[dst + j] = X[src + j];
}
