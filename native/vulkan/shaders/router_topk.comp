#version 450
// MoE routing, one invocation per token row: softmax over the row's expert logits (in place), then
// the top_k experts by score (lower index first on ties) with weight score * norm * scaling, where
// norm = 1 / (sum of the top_k scores + 1e-20) when norm_topk, else 1.
// logits f32 [rows, experts]; ids int [rows, top_k]; weights f32 [rows, top_k]. experts <= 256.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer LogitBuf { float L[]; };
layout(std430, binding = 1) writeonly buffer IdBuf { int ids[]; };
layout(std430, binding = 2) writeonly buffer WeightBuf { float weights[]; };
layout(push_constant) uniform Params {
  uint rows, experts, top_k, norm_topk;
  float scaling;
} p;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  if (row >= p.rows) return;
  const uint base = row * p.experts;
  float mx = L[base];
  for (uint e = 1; e < p.experts; ++e) mx = max(mx, L[base + e]);
  float total = 0.0;
  for (uint e = 0; e < p.experts; ++e) {
    const float v = exp(L[base + e] - mx);
    L[base + e] = v;
    total += v;
  }
  const float inv = 1.0 / total;
  for (uint e = 0; e < p.experts; ++e) L[base + e] *= inv;
  // Selection: the k-th pick is the best expert strictly after the (k-1)-th in (score desc, index asc) order.
  float prev_score = 1.0 / 0.0;
  int prev_index = -1;
  float picked_sum = 0.0;
  for (uint k = 0; k < p.top_k; ++k) {
    int best = -1;
    float best_score = 0.0;
    for (uint e = 0; e < p.experts; ++e) {
      const float s = L[base + e];
      const bool after_prev = s < prev_score || (s == prev_score && int(e) > prev_index);
      if (after_prev && (best < 0 || s > best_score)) {
        best = int(e);
        best_score = s;
      }
    }
    ids[row * p.top_k + k] = best;
    weights[row * p.top_k + k] = best_score;
    picked_sum += best_score;
    prev_score = best_score;
    prev_index = best;
  }
  const float norm = p.norm_topk != 0u ? 1.0 / (picked_sum + 1e-20) : 1.0;
  for (uint k = 0; k < p.top_k; ++k) weights[row * p.top_k + k] *= norm * p.scaling;
}
