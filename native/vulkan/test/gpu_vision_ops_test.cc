// The vision encoders' shaders (gpu_vision_ops.h) against float64 / scalar-kernel references on odd
// shapes, on the first Vulkan device (llvmpipe in CI): LayerNorm, bias with each activation, conv
// patches from NCHW and channels-last inputs, strided row copies, SAM's window partition and merge,
// and attention with and without SAM's relative position bias (its per-query terms from
// sam_rel_bias) or with Qwen2's grouped key/value heads and causal-flow mask. Skipped without a
// Vulkan driver unless SCRIPTORIUM_REQUIRE_VULKAN=1.
#include <cmath>
#include <string>
#include <vector>

#include "test/test_harness.h"
#include "vulkan/gpu_vision_ops.h"
#include "vulkan/test/gpu_test_support.h"

using namespace scriptorium;

namespace {

using scriptorium_test::finish;
using scriptorium_test::run;
using namespace scriptorium_gpu_test;

std::unique_ptr<vk::VisionShaderOps> g_ops;

void test_layer_norm(Gpu& gpu, uint32_t rows, uint32_t n) {
  run("layer_norm rows=" + std::to_string(rows) + " n=" + std::to_string(n), [&] {
    const uint32_t ld = n + 3;
    std::vector<float> x = random_f32(static_cast<size_t>(rows) * ld, 2.f);
    for (float& v : x) v += 5.f;  // a mean far from zero, as residual streams have
    const std::vector<float> wb = random_f32(1 + 2 * static_cast<size_t>(n));
    std::vector<float> want(static_cast<size_t>(rows) * ld, 0.f);
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = x.data() + r * ld;
      double mean = 0, var = 0;
      for (uint32_t i = 0; i < n; ++i) mean += row[i];
      mean /= n;
      for (uint32_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
      const double inv = 1.0 / std::sqrt(var / n + 1e-5);
      for (uint32_t i = 0; i < n; ++i) want[r * ld + i] = static_cast<float>((row[i] - mean) * inv * wb[1 + i] + wb[1 + n + i]);
    }
    auto X = gpu.upload(x);
    auto P = gpu.upload(wb);
    g_ops->layer_norm(*gpu.batch, {X.get(), 0}, ld, {P.get(), 1}, {X.get(), 0}, ld, rows, n, 1e-5f);  // in place
    gpu.batch->run();
    std::vector<float> got = gpu.download<float>(*X, x.size());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = n; i < ld; ++i) got[r * ld + i] = 0.f;  // padding is left as it was
    return compare(got, want);
  });
}

void test_bias_act(Gpu& gpu, vk::Activation act, uint32_t n, uint32_t period) {
  run("bias_act act=" + std::to_string(static_cast<int>(act)) + " n=" + std::to_string(n) + " period=" + std::to_string(period), [&] {
    const std::vector<float> y = random_f32(n + 2, 3.f), b = random_f32(period + 1);
    std::vector<float> want(y.begin() + 2, y.end());
    for (uint32_t i = 0; i < n; ++i) want[i] += b[1 + i % period];
    if (act == vk::Activation::GeluErf) kernels_scalar().gelu_erf(want.data(), n);
    if (act == vk::Activation::QuickGelu)
      for (float& v : want) v = v / (1.0f + std::exp(-1.702f * v));
    auto Y = gpu.upload(y);
    auto B = gpu.upload(b);
    g_ops->bias_act(*gpu.batch, {Y.get(), 2}, n, {B.get(), 1}, period, act);
    gpu.batch->run();
    return compare(gpu.download<float>(*Y, n, 2), want, 1e-6);
  });
}

// A B x C x H x W image read through `strides`; k x k kernel with stride and padding.
void test_im2col(Gpu& gpu, bool channels_last, uint32_t B, uint32_t C, uint32_t H, uint32_t W, uint32_t k, uint32_t stride,
                 uint32_t pad) {
  run(std::string("im2col ") + (channels_last ? "NHWC" : "NCHW") + " B=" + std::to_string(B) + " C=" + std::to_string(C) +
          " " + std::to_string(H) + "x" + std::to_string(W) + " k=" + std::to_string(k) + " stride=" + std::to_string(stride) +
          " pad=" + std::to_string(pad),
      [&] {
        const uint32_t strides[4] = {C * H * W, channels_last ? 1 : H * W, channels_last ? W * C : W, channels_last ? C : 1};
        const uint32_t x_off = 5;
        const std::vector<float> x = random_f32(x_off + static_cast<size_t>(B) * C * H * W);
        const uint32_t Ho = (H + 2 * pad - k) / stride + 1, Wo = (W + 2 * pad - k) / stride + 1, cols = C * k * k;
        std::vector<float> want(static_cast<size_t>(B) * Ho * Wo * cols);
        for (uint32_t b = 0; b < B; ++b)
          for (uint32_t oy = 0; oy < Ho; ++oy)
            for (uint32_t ox = 0; ox < Wo; ++ox)
              for (uint32_t c = 0; c < C; ++c)
                for (uint32_t ky = 0; ky < k; ++ky)
                  for (uint32_t kx = 0; kx < k; ++kx) {
                    const int y = static_cast<int>(oy * stride + ky) - static_cast<int>(pad);
                    const int xx = static_cast<int>(ox * stride + kx) - static_cast<int>(pad);
                    const bool inside = y >= 0 && y < static_cast<int>(H) && xx >= 0 && xx < static_cast<int>(W);
                    want[((static_cast<size_t>(b) * Ho + oy) * Wo + ox) * cols + (c * k + ky) * k + kx] =
                        inside ? x[x_off + b * strides[0] + c * strides[1] + y * strides[2] + xx * strides[3]] : 0.f;
                  }
        auto X = gpu.upload(x);
        auto O = gpu.upload(std::vector<float>(want.size()));
        g_ops->im2col(*gpu.batch, {X.get(), x_off}, strides, B, C, H, W, k, stride, pad, {O.get(), 0});
        gpu.batch->run();
        return compare(gpu.download<float>(*O, want.size()), want, 0.0);
      });
}

void test_copy_rows(Gpu& gpu, uint32_t views, uint32_t rows, uint32_t width, uint32_t x_view) {
  run("copy_rows views=" + std::to_string(views) + " rows=" + std::to_string(rows) + " width=" + std::to_string(width) +
          (x_view == 0 ? " (one block repeated)" : ""),
      [&] {
        const uint32_t ldx = width + 2, ldo = width + 7, o_view = rows * ldo + 3;
        const std::vector<float> x = random_f32(1 + static_cast<size_t>(views) * std::max(x_view, rows * ldx));
        std::vector<float> want(2 + static_cast<size_t>(views) * o_view, 0.f);
        for (uint32_t v = 0; v < views; ++v)
          for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < width; ++c) want[2 + v * o_view + r * ldo + c] = x[1 + v * x_view + r * ldx + c];
        auto X = gpu.upload(x);
        auto O = gpu.upload(std::vector<float>(want.size(), 0.f));
        g_ops->copy_rows(*gpu.batch, {X.get(), 1}, x_view, ldx, {O.get(), 2}, o_view, ldo, views, rows, width);
        gpu.batch->run();
        return compare(gpu.download<float>(*O, want.size()), want, 0.0);
      });
}

// Partition a grid into windows (zero padding), then merge the windows back onto a second grid.
void test_sam_windows(Gpu& gpu, uint32_t views, uint32_t g, uint32_t C, uint32_t S) {
  run("sam_windows views=" + std::to_string(views) + " g=" + std::to_string(g) + " C=" + std::to_string(C) +
          " S=" + std::to_string(S),
      [&] {
        const uint32_t per = (g + S - 1) / S, tokens = S * S;
        const std::vector<float> grid = random_f32(static_cast<size_t>(views) * g * g * C);
        const std::vector<float> base = random_f32(grid.size());
        std::vector<float> windows(static_cast<size_t>(views) * per * per * tokens * C, 0.f), merged = base;
        for (uint32_t v = 0; v < views; ++v)
          for (uint32_t y = 0; y < g; ++y)
            for (uint32_t x = 0; x < g; ++x) {
              const size_t row = ((static_cast<size_t>(v) * per + y / S) * per + x / S) * tokens + (y % S) * S + x % S;
              for (uint32_t c = 0; c < C; ++c) {
                const size_t p = ((static_cast<size_t>(v) * g + y) * g + x) * C + c;
                windows[row * C + c] = grid[p];
                merged[p] += grid[p];
              }
            }
        auto G = gpu.upload(grid);
        auto Wn = gpu.upload(std::vector<float>(windows.size(), 7.f));
        auto M = gpu.upload(base);
        g_ops->sam_windows(*gpu.batch, {G.get(), 0}, {Wn.get(), 0}, views, g, C, S, false);
        g_ops->sam_windows(*gpu.batch, {M.get(), 0}, {Wn.get(), 0}, views, g, C, S, true);
        gpu.batch->run();
        const std::string partition = compare(gpu.download<float>(*Wn, windows.size()), windows, 0.0);
        if (!partition.empty()) return "partition: " + partition;
        const std::string merge = compare(gpu.download<float>(*M, merged.size()), merged, 1e-7);
        return merge.empty() ? merge : "merge: " + merge;
      });
}

// Where attention reads its operands: q of row r at q_off + r * ld, k and v at k_off / v_off + r * ld.
struct QkvLayout {
  uint32_t ld, q_off, k_off, v_off;
};

// Float64 attention within seqs sequences of L tokens: query head h reads key/value head h / group,
// token t sees keys [0, visible(t)), and bias(t, j, q) adds to the scaled score of key j.
template <typename Visible, typename Bias>
std::vector<float> reference_attention(const std::vector<float>& qkv, QkvLayout at, uint32_t seqs, uint32_t L,
                                       uint32_t heads, uint32_t group, uint32_t d, Visible visible, Bias bias) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(d)));
  std::vector<float> want(static_cast<size_t>(seqs) * L * heads * d);
  std::vector<double> scores(L);
  for (uint32_t s = 0; s < seqs; ++s)
    for (uint32_t h = 0; h < heads; ++h)
      for (uint32_t t = 0; t < L; ++t) {
        const float* q = qkv.data() + at.q_off + (s * L + t) * at.ld + h * d;
        const uint32_t keys = visible(t), kv = (h / group) * d;
        double top = -INFINITY;
        for (uint32_t j = 0; j < keys; ++j) {
          const float* k = qkv.data() + at.k_off + (s * L + j) * at.ld + kv;
          double dot = 0;
          for (uint32_t i = 0; i < d; ++i) dot += static_cast<double>(q[i]) * k[i];
          scores[j] = static_cast<float>(scale) * dot + bias(t, j, q);
          top = std::max(top, scores[j]);
        }
        double total = 0;
        for (uint32_t j = 0; j < keys; ++j) total += (scores[j] = std::exp(scores[j] - top));
        for (uint32_t i = 0; i < d; ++i) {
          double acc = 0;
          for (uint32_t j = 0; j < keys; ++j) acc += scores[j] * qkv[at.v_off + (s * L + j) * at.ld + kv + i];
          want[((static_cast<size_t>(s) * L + t) * heads + h) * d + i] = static_cast<float>(acc / total);
        }
      }
  return want;
}

// Attention inside seqs sequences of L = S*S tokens, q/k/v interleaved in rows of 3 * heads * d (+ pad);
// with_rel adds SAM's decomposed relative position bias.
void test_attention(Gpu& gpu, uint32_t seqs, uint32_t S, uint32_t heads, uint32_t d, bool with_rel) {
  run("vision attention seqs=" + std::to_string(seqs) + " L=" + std::to_string(S * S) + " heads=" + std::to_string(heads) +
          " d=" + std::to_string(d) + (with_rel ? " with rel-pos" : ""),
      [&] {
        const uint32_t L = S * S, width = heads * d, ld = 3 * width + 1, rows = seqs * L;
        const float scale = 1.f / std::sqrt(static_cast<float>(d));
        const std::vector<float> qkv = random_f32(static_cast<size_t>(rows) * ld, 1.5f);
        const uint32_t table = (2 * S - 1) * d;
        const std::vector<float> rel = random_f32(3 + 2 * static_cast<size_t>(table), 0.5f);
        const auto rel_bias = [&](uint32_t t, uint32_t j, const float* q) {
          if (!with_rel) return 0.0;
          const float* rh = rel.data() + 3 + (t / S - j / S + S - 1) * d;
          const float* rw = rel.data() + 3 + table + (t % S - j % S + S - 1) * d;
          double bias = 0;
          for (uint32_t i = 0; i < d; ++i) bias += static_cast<double>(q[i]) * (rh[i] + static_cast<double>(rw[i]));
          return bias;
        };
        const std::vector<float> want = reference_attention(qkv, {ld, 0, width, 2 * width}, seqs, L, heads, 1, d,
                                                            [&](uint32_t) { return L; }, rel_bias);
        auto X = gpu.upload(qkv);
        auto R = gpu.upload(rel);
        auto O = gpu.upload(std::vector<float>(want.size()));
        auto Bias = gpu.upload(std::vector<float>(2 + static_cast<size_t>(rows) * heads * 2 * S));
        const vk::RelativePositions positions{R.get(), 3, 3 + table, S};
        const vk::RelativeBias bias{{Bias.get(), 2}, S};
        if (with_rel) g_ops->sam_rel_bias(*gpu.batch, *X, 0, ld, rows, heads, d, positions, bias.bias);
        g_ops->attention(*gpu.batch, *X, 0, width, 2 * width, ld, {O.get(), 0}, width, seqs, L, heads, d, scale,
                         with_rel ? &bias : nullptr);
        gpu.batch->run();
        return compare(gpu.download<float>(*O, want.size()), want);
      });
}

// Qwen2's causal flow over seqs sequences of `tokens` image tokens followed by as many queries, with
// grouped key/value heads, laid out as the encoder's fused rows [q | k | v] (+ pad) after an offset.
void test_causal_flow_attention(Gpu& gpu, uint32_t seqs, uint32_t tokens, uint32_t heads, uint32_t group, uint32_t d) {
  run("vision attention, causal flow seqs=" + std::to_string(seqs) + " tokens=" + std::to_string(tokens) +
          " heads=" + std::to_string(heads) + " kv_heads=" + std::to_string(heads / group) + " d=" + std::to_string(d),
      [&] {
        const uint32_t L = 2 * tokens, width = heads * d, kv_width = width / group, ld = width + 2 * kv_width + 3;
        const uint32_t offset = 7, rows = seqs * L;
        const QkvLayout at{ld, offset, offset + width, offset + width + kv_width};
        const std::vector<float> qkv = random_f32(offset + static_cast<size_t>(rows) * ld, 1.5f);
        const auto visible = [&](uint32_t t) { return t < tokens ? tokens : t + 1; };
        const std::vector<float> want = reference_attention(qkv, at, seqs, L, heads, group, d, visible,
                                                            [](uint32_t, uint32_t, const float*) { return 0.0; });
        auto X = gpu.upload(qkv);
        auto O = gpu.upload(std::vector<float>(want.size()));
        g_ops->attention(*gpu.batch, *X, at.q_off, at.k_off, at.v_off, ld, {O.get(), 0}, width, seqs, L, heads, d,
                         1.f / std::sqrt(static_cast<float>(d)), nullptr, vk::AttentionKeys{group, tokens});
        gpu.batch->run();
        return compare(gpu.download<float>(*O, want.size()), want);
      });
}

void test_bounds(Gpu& gpu) {
  run("a vision operand outside its buffer is rejected before dispatch", [&]() -> std::string {
    auto small = gpu.upload(std::vector<float>(10));
    try {
      g_ops->layer_norm(*gpu.batch, {small.get(), 0}, 4, {small.get(), 4}, {small.get(), 0}, 4, 2, 4, 1e-6f);
    } catch (const std::invalid_argument&) {
      return "";
    }
    return "no error";
  });
}

}  // namespace

int main() {
  Gpu gpu;
  int status = 0;
  if (!open_test_device(gpu, "vision shader tests", status)) return status;
  g_ops = std::make_unique<vk::VisionShaderOps>(*gpu.device);

  test_layer_norm(gpu, 1, 1);
  test_layer_norm(gpu, 9, 97);
  test_layer_norm(gpu, 4, 1031);
  for (vk::Activation act : {vk::Activation::None, vk::Activation::GeluErf, vk::Activation::QuickGelu})
    test_bias_act(gpu, act, 70001, 383);
  test_bias_act(gpu, vk::Activation::None, 3 * 5 * 7, 5 * 7);
  test_im2col(gpu, false, 2, 3, 33, 17, 16, 16, 0);
  test_im2col(gpu, true, 3, 5, 9, 7, 3, 1, 1);
  test_im2col(gpu, true, 2, 4, 11, 11, 3, 2, 1);
  test_copy_rows(gpu, 3, 5, 7, 41);
  test_copy_rows(gpu, 4, 1, 129, 0);
  test_sam_windows(gpu, 2, 9, 5, 4);
  test_sam_windows(gpu, 1, 8, 3, 4);
  test_sam_windows(gpu, 3, 5, 2, 7);
  test_attention(gpu, 3, 5, 2, 8, false);
  test_attention(gpu, 2, 9, 3, 32, true);
  test_attention(gpu, 1, 3, 1, 65, true);
  test_attention(gpu, 2, 1, 2, 128, true);
  test_attention(gpu, 1, 12, 2, 64, true);  // 144 keys: several key blocks and query workgroups
  test_causal_flow_attention(gpu, 2, 5, 3, 3, 8);
  test_causal_flow_attention(gpu, 1, 37, 4, 2, 32);  // 74 tokens: queries in two workgroups, three key blocks
  test_causal_flow_attention(gpu, 2, 48, 6, 3, 20);  // 96 tokens; any head_dim
  test_causal_flow_attention(gpu, 1, 70, 2, 1, 64);  // workgroups of queries only, image tokens only, and both
  test_bounds(gpu);
  g_ops.reset();
  return finish();
}
