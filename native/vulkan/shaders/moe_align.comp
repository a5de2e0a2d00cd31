#version 450
// MoE expert grouping (the "align block size" step of grouped MoE products), one workgroup: turns
// the router's top-k picks of n / top_k token rows into per-expert lists of entries. Expert e owns
// entries [start[e], start[e + 1]): the rows that picked it in row order, then padding up to a
// multiple of BLOCK entries, so a block never mixes experts; experts in index order.
// In: ids int [n] and weights f32 [n] at element offset pick_off (router_topk's [rows, top_k]).
// Out: entry_row int [capacity] (a padding entry points at row 0 with weight 0), entry_weight f32
// [capacity], blocks int [capacity / BLOCK, 2] = (expert, real rows; expert -1 past the last expert's
// entries), row_slot int [n]: row r's entries in expert index order, the order the combine adds them.
// capacity >= ShaderOps::moe_capacity(n, experts), experts <= 256. Each expert's invocation scans
// every pick, so no atomics decide where an entry lands.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer IdBuf { int ids[]; };
layout(std430, binding = 1) readonly buffer WeightBuf { float weights[]; };
layout(std430, binding = 2) writeonly buffer EntryRowBuf { int entry_row[]; };
layout(std430, binding = 3) writeonly buffer EntryWeightBuf { float entry_weight[]; };
layout(std430, binding = 4) writeonly buffer BlockBuf { int blocks[]; };
layout(std430, binding = 5) writeonly buffer SlotBuf { int row_slot[]; };
layout(push_constant) uniform Params {
  uint n, top_k, experts, capacity, pick_off;
} p;

const uint BLOCK = 8;  // ShaderOps::kMoeBlockRows
shared uint start[257];

void main() {
  const uint e = gl_LocalInvocationID.x;
  // A slot no valid expert id fills stays -1 and the combine skips it.
  for (uint i = e; i < p.n; i += 256) row_slot[i] = -1;
  uint count = 0;
  if (e < p.experts)
    for (uint i = 0; i < p.n; ++i)
      if (ids[p.pick_off + i] == int(e)) ++count;
  start[e + 1] = (count + BLOCK - 1) / BLOCK * BLOCK;
  if (e == 0) start[0] = 0;
  memoryBarrierBuffer();
  barrier();
  if (e == 0)
    for (uint i = 1; i <= 256; ++i) start[i] += start[i - 1];
  barrier();
  if (e < p.experts && count > 0) {
    uint entry = start[e];
    for (uint i = 0; i < p.n; ++i) {
      if (ids[p.pick_off + i] != int(e)) continue;
      const uint row = i / p.top_k, first = p.pick_off + row * p.top_k;
      uint rank = 0;  // the row's picks with a smaller expert index come first
      for (uint k = 0; k < p.top_k; ++k) {
        const int other = ids[first + k];
        if (other >= 0 && other < int(e)) ++rank;
      }
      row_slot[row * p.top_k + rank] = int(entry);
      entry_row[entry] = int(row);
      entry_weight[entry] = weights[p.pick_off + i];
      ++entry;
    }
    for (uint b = start[e] / BLOCK; b < start[e + 1] / BLOCK; ++b) {
      blocks[b * 2] = int(e);
      blocks[b * 2 + 1] = int(min(BLOCK, count - (b * BLOCK - start[e])));
    }
    for (; entry < start[e + 1]; ++entry) {
      entry_row[entry] = 0;
      entry_weight[entry] = 0.0;
    }
  }
  const uint total = start[256];
  for (uint i = total + e; i < p.capacity; i += 256) {
    entry_row[i] = 0;
    entry_weight[i] = 0.0;
  }
  for (uint b = total / BLOCK + e; b < p.capacity / BLOCK; b += 256) {
    blocks[b * 2] = -1;
    blocks[b * 2 + 1] = 0;
  }
}
