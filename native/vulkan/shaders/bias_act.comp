#version 450
// y[i] = act(y[i] + b[i % period]) for i < n: a linear layer's bias (period = its width) or a
// position table added to every view (period = the view's elements), then act: 0 none, 1 exact GELU
// (x/2 (1 + erf(x / sqrt 2))), 2 quick GELU (x sigmoid(1.702 x)).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer YBuf { float Y[]; };
layout(std430, binding = 1) readonly buffer BBuf { float B[]; };
layout(push_constant) uniform Params {
  uint n, y_off, b_off, period, act;
} p;

// erfc(z) for z >= 0 with relative error below 1.2e-7 (Chebyshev fit of Numerical Recipes' erfcc).
float erfc_nonnegative(float z) {
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
                     t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + poly);
}

float activate(float x) {
  if (p.act == 1u) {
    // 1 + erf(z) as 2 - erfc(z) or erfc(-z): no cancellation for negative x.
    const float z = abs(x) * 0.70710678118654752;
    const float c = erfc_nonnegative(z);
    return 0.5 * x * (x >= 0.0 ? 2.0 - c : c);
  }
  if (p.act == 2u) return x / (1.0 + exp(-1.702 * x));
  return x;
}

void main() {
  const uint stride = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) Y[p.y_off + i] = activate(Y[p.y_off + i] + B[p.b_off + i % p.period]);
}
