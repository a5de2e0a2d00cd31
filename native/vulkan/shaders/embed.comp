#version 450
// out[r, j] = table[ids[r], j] as f32 for r < rows, j < hidden: table bf16 [vocab, hidden], ids
// checked against the vocabulary by the caller.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer TableBuf { uint table[]; };
layout(std430, binding = 1) readonly buffer IdBuf { int ids[]; };
layout(std430, binding = 2) writeonly buffer OutBuf { float out_v[]; };
layout(push_constant) uniform Params {
  uint hidden, ids_off, out_off;
} p;
#include "bf16.glsl"

void main() {
  const uint row = gl_WorkGroupID.y;
  const uint id = uint(ids[p.ids_off + row]);
  for (uint j = gl_GlobalInvocationID.x; j < p.hidden; j += gl_NumWorkGroups.x * 256) {
    const uint index = id * p.hidden + j;
    out_v[p.out_off + row * p.hidden + j] = bf16_at(table[index >> 1], index);
  }
}
