#version 450
// x[r, :] += weight * out[entry, :] for each of row r's top_k entries in row_slot order (expert index
// order, as the CPU decoder adds its experts): the routed experts' outputs added to the residual
// stream. One invocation per element owns its sum, so there are no atomics and a row's result does
// not depend on the other rows of the batch.
// x f32 [rows, width] (stride width); out f32 [capacity, width]; row_slot int [rows, top_k] and
// entry_weight f32 [capacity] from moe_align.comp (a slot of -1, left by an invalid expert id, is skipped).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer OutBuf { float O[]; };
layout(std430, binding = 2) readonly buffer SlotBuf { int row_slot[]; };
layout(std430, binding = 3) readonly buffer EntryWeightBuf { float entry_weight[]; };
layout(push_constant) uniform Params {
  uint width, top_k, capacity, x_off, out_off;
} p;

void main() {
  const uint r = gl_WorkGroupID.y;
  for (uint j = gl_GlobalInvocationID.x; j < p.width; j += gl_NumWorkGroups.x * 256) {
    const uint at = p.x_off + r * p.width + j;
    float acc = X[at];
    for (uint k = 0; k < p.top_k; ++k) {
      const int slot = row_slot[r * p.top_k + k];
      if (slot < 0 || uint(slot) >= p.capacity) continue;
      acc += entry_weight[slot] * O[p.out_off + uint(slot) * p.width + j];
    }
    X[at] = acc;
  }
}
