#version 450
// The device's memory read bandwidth probe: every invocation folds a grid-strided share of the n
// 16-byte words of src with XOR and writes one word, so each byte is read once and nothing is skipped.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uvec4 acc = uvec4(0);
  const uint stride = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) acc ^= src[i];
  dst[gl_GlobalInvocationID.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
