#version 450
// out[r, j] = table[ids[r] - first, j] as f32 for the rows r < rows whose id lies in [first, first +
// table_rows), j < hidden; other rows are left as they are. table bf16 [table_rows, hidden] (a block of
// the embedding's rows, at element table_off), ids checked against the vocabulary by the caller.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer TableBuf { uint table[]; };
layout(std430, binding = 1) readonly buffer IdBuf { int ids[]; };
layout(std430, binding = 2) writeonly buffer OutBuf { float out_v[]; };
layout(push_constant) uniform Params {
  uint hidden, ids_off, out_off, table_off, first, table_rows;
} p;
#include "bf16.glsl"

void main() {
  const uint row = gl_WorkGroupID.y;
  const uint id = uint(ids[p.ids_off + row]);
  if (id < p.first || id - p.first >= p.table_rows) return;
  for (uint j = gl_GlobalInvocationID.x; j < p.hidden; j += gl_NumWorkGroups.x * 256) {
    const uint index = p.table_off + (id - p.first) * p.hidden + j;
    out_v[p.out_off + row * p.hidden + j] = bf16_at(table[index >> 1], index);
  }
}
