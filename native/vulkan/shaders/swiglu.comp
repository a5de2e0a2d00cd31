#version 450
// out[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i < n (out may alias gate).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GateBuf { float gate_v[]; };
layout(std430, binding = 1) readonly buffer UpBuf { float up_v[]; };
layout(std430, binding = 2) buffer OutBuf { float out_v[]; };
layout(push_constant) uniform Params {
  uint n, gate_off, up_off, out_off;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    const float g = gate_v[p.gate_off + i];
    out_v[p.out_off + i] = g / (1.0 + exp(-g)) * up_v[p.up_off + i];
  }
}
