// Vision building blocks (native/cpu/cpu_vision_ops.h) and the position tables' interpolations
// (native/common/interpolate.h) against naive float64 references and the properties PyTorch's
// interpolations have. Prints one line per test and "N passed, M failed"; exits non-zero on any
// failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/interpolate.h"
#include "common/thread_pool.h"
#include "cpu/attention.h"
#include "cpu/cpu_vision_ops.h"
#include "cpu/kernels.h"
#include "test/test_harness.h"

using namespace scriptorium;

namespace {

using scriptorium_test::fmt;
using scriptorium_test::randoms;
using scriptorium_test::finish;
using scriptorium_test::run;

std::vector<bf16_t> bf16_randoms(size_t n, float scale) {
  std::vector<bf16_t> w(n);
  for (bf16_t& x : w) x = f32_to_bf16(randoms(1, -scale, scale)[0]);
  return w;
}

// Largest |got - want| / (1 + |want|).
double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  return worst;
}

ThreadPool& pool() {
  static ThreadPool p(3);
  return p;
}

// ---------------------------------------------------------------- conv2d

struct ConvCase {
  int64_t B, in, out, H, W, k, stride, pad;
  bool nhwc, bias;
};

/* direct convolution: Y[b, oy, ox, o] = bias[o] + sum_{c,ky,kx} W[o,c,ky,kx] X(b,c,y,x) */
std::string check_conv(const ConvCase& cc) {
  Conv2d conv;
  std::vector<bf16_t> weight = bf16_randoms(cc.out * cc.in * cc.k * cc.k, 0.5f);
  conv.weight.rows = weight.data();
  if (cc.bias) conv.bias = randoms(cc.out);
  conv.out = cc.out;
  conv.in = cc.in;
  conv.kernel = cc.k;
  conv.stride = cc.stride;
  conv.pad = cc.pad;
  const ImageStrides s = cc.nhwc ? ImageStrides::nhwc(cc.in, cc.H, cc.W) : ImageStrides::nchw(cc.in, cc.H, cc.W);
  const std::vector<float> X = randoms(cc.B * cc.in * cc.H * cc.W);
  const int64_t Ho = conv.output_size(cc.H), Wo = conv.output_size(cc.W);
  std::vector<float> Y(cc.B * Ho * Wo * cc.out);
  conv2d(pool(), conv, X.data(), s, cc.B, cc.H, cc.W, Y.data(), Precision::Exact);
  std::vector<double> ref(Y.size());
  for (int64_t b = 0; b < cc.B; ++b)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t o = 0; o < cc.out; ++o) {
          double acc = cc.bias ? conv.bias[o] : 0.0;
          for (int64_t c = 0; c < cc.in; ++c)
            for (int64_t ky = 0; ky < cc.k; ++ky)
              for (int64_t kx = 0; kx < cc.k; ++kx) {
                const int64_t y = oy * cc.stride - cc.pad + ky, x = ox * cc.stride - cc.pad + kx;
                if (y < 0 || y >= cc.H || x < 0 || x >= cc.W) continue;
                acc += static_cast<double>(bf16_to_f32(weight[((o * cc.in + c) * cc.k + ky) * cc.k + kx])) *
                       X[b * s.batch + c * s.channel + y * s.row + x * s.col];
              }
          ref[((b * Ho + oy) * Wo + ox) * cc.out + o] = acc;
        }
  const double err = max_rel_error(Y, ref);
  return err < 1e-4 ? "" : fmt("max relative error %.3g", err);
}

void test_conv2d() {
  const ConvCase cases[] = {
      {2, 3, 8, 32, 32, 16, 16, 0, false, true},  // SAM patch embedding: NCHW pixels, k = stride = 16
      {2, 12, 7, 5, 6, 1, 1, 0, true, false},     // neck.0: 1x1 on channels-last (plain matmul path)
      {1, 6, 5, 7, 7, 3, 1, 1, true, false},      // neck.2: 3x3 pad 1
      {2, 5, 9, 8, 8, 3, 2, 1, true, false},      // net_2 / net_3: 3x3 stride 2 pad 1, even side
      {1, 4, 3, 7, 5, 3, 2, 1, true, true},       // odd sides round up
      {1, 3, 4, 6, 6, 1, 1, 0, false, true},      // 1x1 on NCHW goes through im2col
  };
  for (const ConvCase& cc : cases)
    run("conv2d " + std::to_string(cc.k) + "x" + std::to_string(cc.k) + " s" + std::to_string(cc.stride) + " p" +
            std::to_string(cc.pad) + (cc.nhwc ? " nhwc" : " nchw") + " " + std::to_string(cc.H) + "x" +
            std::to_string(cc.W) + " matches the direct 7-loop convolution",
        [&] { return check_conv(cc); });
}

// ---------------------------------------------------------------- elementwise

/* (X - mean) / sqrt(var + eps) * w + b per row of X[M, C], in float64 */
std::vector<double> layer_norm_reference(const LayerNorm& norm, const std::vector<float>& X, int64_t M) {
  const int64_t C = static_cast<int64_t>(norm.weight.size());
  std::vector<double> ref(M * C);
  for (int64_t m = 0; m < M; ++m) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += X[m * C + c] / static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) var += (X[m * C + c] - mean) * (X[m * C + c] - mean) / static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c)
      ref[m * C + c] = (X[m * C + c] - mean) / std::sqrt(var + norm.eps) * norm.weight[c] + norm.bias[c];
  }
  return ref;
}

void test_layer_norm() {
  run("layer_norm matches (x - mean) / sqrt(var + eps) * w + b, also in place", [] {
    const int64_t M = 37, C = 99;  // a width that is not a multiple of the 16 partial sums
    LayerNorm norm{randoms(C, 0.5f, 1.5f), randoms(C), 1e-6f};
    std::vector<float> X = randoms(M * C, -3.f, 5.f), Y(M * C);
    const std::vector<double> ref = layer_norm_reference(norm, X, M);
    layer_norm(pool(), norm, X.data(), Y.data(), M);
    const double err = max_rel_error(Y, ref);
    if (err > 1e-6) return fmt("out of place: max relative error %.3g", err);
    layer_norm(pool(), norm, X.data(), X.data(), M);
    const double err_in_place = max_rel_error(X, ref);
    return err_in_place > 1e-6 ? fmt("in place: max relative error %.3g", err_in_place) : "";
  });
  run("layer_norm in F32 stays within 1e-6 of float64 on rows whose mean is 1000 times their spread", [] {
    const int64_t M = 64, C = 1024;
    LayerNorm norm{std::vector<float>(C, 1.f), std::vector<float>(C, 0.f), 1e-6f};
    std::vector<float> X = randoms(M * C, -1.f, 1.f), Y(M * C);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) X[m * C + c] += 1000.f * (m % 2 ? 1.f : -1.f);
    layer_norm(pool(), norm, X.data(), Y.data(), M);
    const double err = max_rel_error(Y, layer_norm_reference(norm, X, M));
    return err > 1e-6 ? fmt("max relative error %.3g", err) : "";
  });
}

// ---------------------------------------------------------------- linear and its epilogue

struct LinearCase {
  Linear layer;
  std::vector<bf16_t> weight;
};

LinearCase random_linear(int64_t out, int64_t in) {
  LinearCase lc;
  lc.weight = bf16_randoms(out * in, 1.0f / std::sqrt(static_cast<float>(in)));
  lc.layer.weight.rows = lc.weight.data();
  lc.layer.bias = randoms(out);
  lc.layer.out = out;
  lc.layer.in = in;
  return lc;
}

/* X[M,in] @ W^T + b in float64 */
std::vector<double> linear_reference(const Linear& layer, const std::vector<float>& X, int64_t M) {
  std::vector<double> ref(M * layer.out);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < layer.out; ++o) {
      double acc = layer.bias[o];
      for (int64_t k = 0; k < layer.in; ++k) acc += static_cast<double>(bf16_to_f32(layer.weight.rows[o * layer.in + k])) * X[m * layer.in + k];
      ref[m * layer.out + o] = acc;
    }
  return ref;
}

// 7 rows take matmul_bf16's column split (epilogue after the product), 400 its row split (epilogue
// in each row chunk, 3 threads). The products are exact precision: BF16 hi + lo parts of X, about
// 8e-6 of each term.
const int64_t kEpilogueRowCounts[] = {7, 400};

void test_linear_epilogue() {
  const std::pair<Activation, const char*> activations[] = {
      {Activation::None, "bias"}, {Activation::GeluErf, "bias + exact GELU"}, {Activation::QuickGelu, "bias + quick GELU"},
      {Activation::SwiGlu, "bias + SwiGLU"}};
  for (const auto& [activation, name] : activations)
    for (const int64_t M : kEpilogueRowCounts)
      run(std::string("linear with ") + name + " on " + std::to_string(M) + " rows matches the float64 reference", [&] {
        const LinearCase lc = random_linear(40, 33);
        const std::vector<float> X = randoms(M * 33, -2.f, 2.f), up = randoms(M * 40, -2.f, 2.f);
        std::vector<double> ref = linear_reference(lc.layer, X, M);
        for (size_t i = 0; i < ref.size(); ++i) {
          const double v = ref[i];
          if (activation == Activation::GeluErf) ref[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
          if (activation == Activation::QuickGelu) ref[i] = v / (1.0 + std::exp(-1.702 * v));
          if (activation == Activation::SwiGlu) ref[i] = v / (1.0 + std::exp(-v)) * up[i];
        }
        Epilogue e;
        e.activation = activation;
        e.up = up.data();
        std::vector<float> Y(M * 40);
        linear(pool(), lc.layer, X.data(), Y.data(), M, Precision::Exact, e);
        const double err = max_rel_error(Y, ref);
        return err > 2e-5 ? fmt("max relative error %.3g", err) : "";
      });
  for (const int64_t M : kEpilogueRowCounts)
    run("linear with bias, residual add and LayerNorm of the sum on " + std::to_string(M) + " rows matches float64", [&] {
      const int64_t C = 48;
      const LinearCase lc = random_linear(C, 64);
      const LayerNorm norm{randoms(C, 0.5f, 1.5f), randoms(C), 1e-6f};
      const std::vector<float> X = randoms(M * 64, -2.f, 2.f), R0 = randoms(M * C, -3.f, 3.f);
      std::vector<double> sum = linear_reference(lc.layer, X, M);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += R0[i];
      const std::vector<float> sum_f(sum.begin(), sum.end());
      Epilogue e;
      std::vector<float> R = R0, Y(M * C);
      e.residual = R.data();
      e.norm = &norm;
      linear(pool(), lc.layer, X.data(), Y.data(), M, Precision::Exact, e);
      const double residual_err = max_rel_error(R, sum);
      if (residual_err > 2e-5) return fmt("residual: max relative error %.3g", residual_err);
      const double norm_err = max_rel_error(Y, layer_norm_reference(norm, sum_f, M));
      return norm_err > 1e-4 ? fmt("norm: max relative error %.3g", norm_err) : "";
    });
  run("linear's epilogue leaves every row bitwise what the row alone gives (row split in 60-row blocks vs one row)", [] {
    const int64_t M = 800, C = 4096, K = 16;
    const LinearCase lc = random_linear(C, K);
    const LayerNorm norm{randoms(C, 0.5f, 1.5f), randoms(C), 1e-6f};
    const std::vector<float> X = randoms(M * K, -2.f, 2.f), R0 = randoms(M * C);
    Epilogue e;
    e.activation = Activation::GeluErf;
    e.norm = &norm;
    std::vector<float> R = R0, Y(M * C);
    e.residual = R.data();
    linear(pool(), lc.layer, X.data(), Y.data(), M, Precision::Fast, e);
    std::vector<float> r(C), y(C);
    for (int64_t m = 0; m < M; ++m) {
      std::copy(R0.begin() + m * C, R0.begin() + (m + 1) * C, r.begin());
      e.residual = r.data();
      linear(pool(), lc.layer, X.data() + m * K, y.data(), 1, Precision::Fast, e);
      if (!std::equal(y.begin(), y.end(), Y.begin() + m * C) || !std::equal(r.begin(), r.end(), R.begin() + m * C))
        return fmt("row %g differs", m);
    }
    return std::string();
  });
  run("linear refuses SwiGLU without the up projection and a norm of another width", [] {
    const LinearCase lc = random_linear(8, 8);
    const std::vector<float> X = randoms(8);
    std::vector<float> Y(8);
    Epilogue swiglu;
    swiglu.activation = Activation::SwiGlu;
    const LayerNorm narrow{randoms(4), randoms(4), 1e-6f};
    Epilogue norm;
    norm.norm = &narrow;
    for (const Epilogue* e : {&swiglu, &norm}) {
      try {
        linear(pool(), lc.layer, X.data(), Y.data(), 1, Precision::Exact, *e);
        return std::string("no error");
      } catch (const std::invalid_argument&) {
      }
    }
    return std::string();
  });
}

// ---------------------------------------------------------------- interpolation

void test_bicubic() {
  run("bicubic AA: equal sizes copy the grid", [] {
    const std::vector<float> X = randoms(9 * 7 * 5);
    std::vector<float> Y(X.size());
    resize_bicubic_aa(pool(), X.data(), 9, 7, 5, Y.data(), 9, 7);
    return X == Y ? "" : std::string("output differs from input");
  });
  run("bicubic AA: a constant grid stays constant (down 64->40, 64->32, up 16->20, mixed 8x12->12x5)", [] {
    const int64_t shapes[][4] = {{64, 64, 40, 40}, {64, 64, 32, 32}, {16, 16, 20, 20}, {8, 12, 12, 5}};
    for (const auto& sh : shapes) {
      const int64_t C = 3;
      std::vector<float> X(sh[0] * sh[1] * C);
      for (size_t i = 0; i < X.size(); ++i) X[i] = 0.75f + static_cast<float>(i % C);
      std::vector<float> Y(sh[2] * sh[3] * C);
      resize_bicubic_aa(pool(), X.data(), sh[0], sh[1], C, Y.data(), sh[2], sh[3]);
      for (size_t i = 0; i < Y.size(); ++i)
        if (std::abs(Y[i] - (0.75f + static_cast<float>(i % C))) > 1e-6f)
          return fmt("%gx%g -> %gx%g: not constant", sh[0], sh[1], sh[2], sh[3]);
    }
    return std::string();
  });
  // Away from the borders a symmetric kernel reproduces a linear ramp when the source centre
  // c = scale * (i + 0.5) - 0.5 sits on the input lattice or halfway (2x down, 2x up).
  run("bicubic AA: a linear ramp is reproduced away from the borders (2x down along x, 2x up along y)", [] {
    const int64_t ih = 10, iw = 64, oh = 20, ow = 32;
    std::vector<float> X(ih * iw);
    for (int64_t y = 0; y < ih; ++y)
      for (int64_t x = 0; x < iw; ++x) X[y * iw + x] = 0.25f * x - 0.5f * y + 3.f;
    std::vector<float> Y(oh * ow);
    resize_bicubic_aa(pool(), X.data(), ih, iw, 1, Y.data(), oh, ow);
    for (int64_t i = 4; i < oh - 4; ++i)  // taps clipped at the borders renormalise
      for (int64_t j = 2; j < ow - 2; ++j) {
        const double sy = 0.5 * (i + 0.5) - 0.5, sx = 2.0 * (j + 0.5) - 0.5;
        const double want = 0.25 * sx - 0.5 * sy + 3.0;
        if (std::abs(Y[i * ow + j] - want) > 1e-5) return fmt("(%g, %g): %g, want %g", i, j, Y[i * ow + j], want);
      }
    return std::string();
  });
  // PyTorch's formulas worked by hand for 4 -> 2: scale 2, support 4, taps x = (j - 0.5) / 2 for
  // output 0 give a = -0.5 cubic weights 0.8671875, 0.8671875, 0.2265625, -0.0703125 (sum 1.890625).
  run("bicubic AA: 4 -> 2 weights follow PyTorch's a = -0.5 antialiased taps", [] {
    const float X[4] = {1.f, 0.f, 0.f, 0.f};
    float Y[2];
    resize_bicubic_aa(pool(), X, 1, 4, 1, Y, 1, 2);
    const double want0 = 0.8671875 / 1.890625, want1 = -0.0703125 / 1.890625;
    if (std::abs(Y[0] - want0) > 1e-6 || std::abs(Y[1] - want1) > 1e-6)
      return fmt("got %g %g, want %g %g", Y[0], Y[1], want0, want1);
    return std::string();
  });
}

void test_linear_resize() {
  run("rel-pos linear resize: equal lengths copy the table", [] {
    const std::vector<float> X = randoms(27 * 8);
    std::vector<float> Y(X.size());
    resize_linear(X.data(), 27, 8, Y.data(), 27);
    return X == Y ? "" : std::string("output differs from input");
  });
  run("rel-pos linear resize 127 -> 63 samples a ramp at max(scale (i + 0.5) - 0.5, 0)", [] {
    const int64_t il = 127, ol = 63, C = 2;
    std::vector<float> X(il * C);
    for (int64_t i = 0; i < il; ++i) X[i * C] = 0.5f * i, X[i * C + 1] = 7.f - 0.25f * i;
    std::vector<float> Y(ol * C);
    resize_linear(X.data(), il, C, Y.data(), ol);
    for (int64_t i = 0; i < ol; ++i) {
      const double src = std::max(127.0 / 63.0 * (i + 0.5) - 0.5, 0.0);
      if (std::abs(Y[i * C] - 0.5 * src) > 1e-5 || std::abs(Y[i * C + 1] - (7.0 - 0.25 * src)) > 1e-5)
        return fmt("row %g: %g, want %g", i, Y[i * C], 0.5 * src);
    }
    return std::string();
  });
  run("rel-pos linear resize 5 -> 8 clamps at both ends", [] {
    const float X[5] = {1.f, 2.f, 4.f, 8.f, 16.f};
    float Y[8];
    resize_linear(X, 5, 1, Y, 8);
    // row 0: source max(-0.1875, 0) = 0; row 7: source 4.1875, neighbours 4 and 4; row 3: 1.6875.
    if (Y[0] != 1.f || Y[7] != 16.f || std::abs(Y[3] - (0.3125 * 2 + 0.6875 * 4)) > 1e-6)
      return fmt("got %g %g %g", Y[0], Y[3], Y[7]);
    return std::string();
  });
}

// ---------------------------------------------------------------- attention

void test_attention() {
  run("attention with GQA, additive bias and a visible-key prefix matches the float64 reference", [] {
    const int64_t B = 2, Tq = 19, Tk = 19, H = 4, KVH = 2, D = 16;
    const float scale = 0.3f;
    const std::vector<float> q = randoms(B * Tq * H * D), k = randoms(B * Tk * KVH * D), v = randoms(B * Tk * KVH * D);
    auto bias_of = [](int64_t b, int64_t h, int64_t t, int64_t j) { return 0.1 * std::sin(1.0 + b + 2 * h + 3 * t + 0.5 * j); };
    auto visible_of = [](int64_t t) { return t < 7 ? int64_t{7} : t + 1; };
    AttentionHooks hooks;
    hooks.bias_scratch = 3;
    hooks.bias = [&](int64_t b, int64_t h, int64_t t, float* scores, float* scratch) {
      scratch[2] = 0.f;  // the scratch is writable
      for (int64_t j = 0; j < Tk; ++j) scores[j] += static_cast<float>(bias_of(b, h, t, j));
    };
    hooks.visible_keys = visible_of;
    std::vector<float> out(B * Tq * H * D);
    attention(pool(), AttentionTensors{q.data(), H * D, k.data(), KVH * D, v.data(), KVH * D, out.data(), H * D},
              AttentionShape{B, Tq, Tk, H, KVH, D, scale}, Precision::Exact, hooks);
    std::vector<double> ref(out.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < Tq; ++t) {
          const int64_t g = h / (H / KVH), n = visible_of(t);
          std::vector<double> p(n);
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += q[(b * Tq + t) * H * D + h * D + d] * k[(b * Tk + j) * KVH * D + g * D + d];
            p[j] = scale * dot + bias_of(b, h, t, j);
            mx = std::max(mx, p[j]);
          }
          for (double& x : p) sum += (x = std::exp(x - mx));
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < n; ++j) acc += p[j] / sum * v[(b * Tk + j) * KVH * D + g * D + d];
            ref[(b * Tq + t) * H * D + h * D + d] = acc;
          }
        }
    const double err = max_rel_error(out, ref);
    return err > 1e-5 ? fmt("max relative error %.3g", err) : "";
  });
}

}  // namespace

int main() {
  scriptorium_test::seed_inputs(2024);
  std::printf("kernels: %s\n", active_kernels().name);
  test_conv2d();
  test_layer_norm();
  test_linear_epilogue();
  test_bicubic();
  test_linear_resize();
  test_attention();
  return finish();
}
