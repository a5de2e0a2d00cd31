// Every shader of the Vulkan backend against the CPU's scalar kernels, on odd shapes, on the first
// Vulkan device (llvmpipe in CI). Tolerances are relative to the largest magnitude of the CPU result:
// the shaders sum in another order than the CPU, so results agree to float rounding, not bitwise.
// Without a Vulkan driver the test is skipped, unless SCRIPTORIUM_REQUIRE_VULKAN=1 makes that a failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "test/test_harness.h"
#include "vulkan/shader_ops.h"
#include "vulkan/test/gpu_test_support.h"

using namespace scriptorium;

namespace {

using scriptorium_test::finish;
using scriptorium_test::run;
using namespace scriptorium_gpu_test;

void test_matmul(Gpu& gpu, uint32_t M, uint32_t N, uint32_t K) {
  run("matmul_bf16 M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K), [&] {
    // Operands sit at odd offsets inside larger buffers, X and Y with padded row strides.
    const uint32_t ldx = K + 3, ldy = N + 5, x_off = 7, w_off = 3, y_off = 11;
    const std::vector<float> x = random_f32(x_off + static_cast<size_t>(M) * ldx);
    const std::vector<bf16_t> w = random_bf16(w_off + static_cast<size_t>(N) * K);
    std::vector<float> want(y_off + static_cast<size_t>(M) * ldy, 0.f);
    kernels_scalar().gemm_bf16(x.data() + x_off, ldx, w.data() + w_off, want.data() + y_off, ldy, M, 0, N, K);
    auto X = gpu.upload(x);
    auto W = gpu.upload(w);
    auto Y = gpu.upload(std::vector<float>(want.size(), 0.f));
    gpu.ops->matmul_bf16(*gpu.batch, {X.get(), x_off}, ldx, {W.get(), w_off}, {Y.get(), y_off}, ldy, M, N, K);
    gpu.batch->run();
    return compare(gpu.download<float>(*Y, want.size()), want);
  });
}

// Fast precision on the portable path: matmul_bf16 computes the product of the BF16-rounded
// activations (what the CPU's gemm_bf16_fast computes), matmul_bf16_exact that of the F32 ones.
void test_matmul_fast(Gpu& gpu, uint32_t M, uint32_t N, uint32_t K) {
  run("matmul_bf16 fast M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K), [&] {
    vk::ShaderOps fast(*gpu.device, vk::kPortablePath, Precision::Fast);
    const uint32_t ldx = K + 1, x_off = 2;
    const std::vector<float> x = random_f32(x_off + static_cast<size_t>(M) * ldx);
    const std::vector<bf16_t> w = random_bf16(static_cast<size_t>(N) * K);
    std::vector<float> rounded(x.size());
    for (size_t i = 0; i < x.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16(x[i]));
    std::vector<float> want_fast(static_cast<size_t>(M) * N), want_exact(want_fast.size());
    kernels_scalar().gemm_bf16(rounded.data() + x_off, ldx, w.data(), want_fast.data(), N, M, 0, N, K);
    kernels_scalar().gemm_bf16(x.data() + x_off, ldx, w.data(), want_exact.data(), N, M, 0, N, K);
    auto X = gpu.upload(x);
    auto W = gpu.upload(w);
    auto Yf = gpu.upload(std::vector<float>(want_fast.size()));
    auto Ye = gpu.upload(std::vector<float>(want_fast.size()));
    fast.matmul_bf16(*gpu.batch, {X.get(), x_off}, ldx, {W.get(), 0}, {Yf.get(), 0}, N, M, N, K);
    fast.matmul_bf16_exact(*gpu.batch, {X.get(), x_off}, ldx, {W.get(), 0}, {Ye.get(), 0}, N, M, N, K);
    gpu.batch->run();
    const std::string rounded_error = compare(gpu.download<float>(*Yf, want_fast.size()), want_fast);
    if (!rounded_error.empty()) return "fast: " + rounded_error;
    const std::string exact_error = compare(gpu.download<float>(*Ye, want_exact.size()), want_exact);
    return exact_error.empty() ? exact_error : "exact: " + exact_error;
  });
}

void test_rmsnorm(Gpu& gpu, uint32_t rows, uint32_t n) {
  run("rmsnorm rows=" + std::to_string(rows) + " n=" + std::to_string(n), [&] {
    const uint32_t ld = n + 2;
    const std::vector<float> x = random_f32(static_cast<size_t>(rows) * ld, 3.f);
    const std::vector<bf16_t> w = random_bf16(n + 1);
    std::vector<float> want(static_cast<size_t>(rows) * n);
    for (uint32_t r = 0; r < rows; ++r) kernels_scalar().rmsnorm(x.data() + r * ld, w.data() + 1, want.data() + r * n, n, 1e-6f);
    auto X = gpu.upload(x);
    auto Wb = gpu.upload(w);
    auto Y = gpu.upload(std::vector<float>(want.size()));
    gpu.ops->rmsnorm(*gpu.batch, {X.get(), 0}, ld, {Wb.get(), 1}, {Y.get(), 0}, n, rows, n, 1e-6f);
    gpu.batch->run();
    return compare(gpu.download<float>(*Y, want.size()), want);
  });
}

void test_rope(Gpu& gpu, uint32_t rows, uint32_t heads, uint32_t d) {
  run("rope rows=" + std::to_string(rows) + " heads=" + std::to_string(heads) + " d=" + std::to_string(d), [&] {
    const uint32_t ld = heads * d + 4, positions = 3000;
    std::vector<float> x = random_f32(static_cast<size_t>(rows) * ld);
    std::vector<int32_t> pos(rows);
    for (uint32_t r = 0; r < rows; ++r) pos[r] = static_cast<int32_t>((r * 977u + 13u) % positions);
    std::vector<float> want = x;
    for (uint32_t r = 0; r < rows; ++r) rope_rotate_half(want.data() + r * ld, heads, d, pos[r], 10000.f);
    auto X = gpu.upload(x);
    auto P = gpu.upload(pos);
    auto T = gpu.upload(vk::rope_table(positions, d, 10000.f));
    gpu.ops->rope(*gpu.batch, {X.get(), 0}, ld, {P.get(), 0}, *T, rows, heads, d);
    gpu.batch->run();
    return compare(gpu.download<float>(*X, x.size()), want);
  });
}

// rows query rows against per-row visible prefixes of two sequences' caches in one buffer (even rows
// read the first, odd rows the second); heads share kv heads in groups. half: the cache in
// kv_store_f16's layout (rows padded to even, so kv heads of odd width start on odd halves) through
// attention_f16, against the CPU's attention_head_f16 on the same halves (every visible prefix
// has a finite score, so the state's sum is positive).
void test_attention(Gpu& gpu, bool half, uint32_t rows, uint32_t heads, uint32_t kv_heads, uint32_t d, uint32_t slots) {
  run(std::string(half ? "attention_f16" : "attention") + " rows=" + std::to_string(rows) + " heads=" +
          std::to_string(heads) + "/" + std::to_string(kv_heads) + " d=" + std::to_string(d) + " keys<=" +
          std::to_string(slots),
      [&] {
        const uint32_t qw = heads * d, kw = kv_heads * d, stride = half ? kw + kw % 2 : kw, group = heads / kv_heads;
        const float scale = 1.f / std::sqrt(static_cast<float>(d));
        const std::vector<float> q = random_f32(static_cast<size_t>(rows) * qw, 2.f);
        const std::vector<float> k32 = random_f32(static_cast<size_t>(2 * slots) * stride);
        const std::vector<float> v32 = random_f32(static_cast<size_t>(2 * slots) * stride);
        std::vector<f16_t> k16(half ? k32.size() : 0), v16(half ? v32.size() : 0);
        kernels_scalar().to_f16(k32.data(), k16.data(), static_cast<int64_t>(k16.size()));
        kernels_scalar().to_f16(v32.data(), v16.data(), static_cast<int64_t>(v16.size()));
        std::vector<int32_t> info(rows * 2);
        std::vector<float> want(static_cast<size_t>(rows) * qw);
        for (uint32_t r = 0; r < rows; ++r) {
          const uint32_t base = (r % 2) * slots * stride, visible = 1 + (r * 37u) % slots;
          info[r * 2] = static_cast<int32_t>(base);
          info[r * 2 + 1] = static_cast<int32_t>(visible);
          for (uint32_t h = 0; h < heads; ++h) {
            const size_t at = base + (h / group) * d;
            std::vector<float> acc(d, 0.f);
            AttentionState state;
            if (half)
              kernels_scalar().attention_head_f16(q.data() + r * qw + h * d, k16.data() + at, v16.data() + at, stride,
                                                  visible, d, scale, acc.data(), &state);
            else
              kernels_scalar().attention_head(q.data() + r * qw + h * d, k32.data() + at, v32.data() + at, stride, visible,
                                              d, scale, acc.data(), &state);
            for (uint32_t i = 0; i < d; ++i) want[r * qw + h * d + i] = acc[i] / state.sum;
          }
        }
        auto Q = gpu.upload(q);
        auto K = half ? gpu.upload(k16) : gpu.upload(k32);
        auto V = half ? gpu.upload(v16) : gpu.upload(v32);
        auto I = gpu.upload(info);
        auto O = gpu.upload(std::vector<float>(want.size()));
        auto attend = half ? &vk::ShaderOps::attention_f16 : &vk::ShaderOps::attention;
        (gpu.ops.get()->*attend)(*gpu.batch, {Q.get(), 0}, qw, *K, *V, stride, {I.get(), 0}, {O.get(), 0}, qw, rows, heads,
                                 group, d, scale);
        gpu.batch->run();
        return compare(gpu.download<float>(*O, want.size()), want);
      });
}

// Rows of odd width through kv_store_f16: every half bit for bit the CPU's to_f16, the pad half 0,
// and the words around the rows untouched. The values include ties at both ranges, subnormals, the
// saturation edge, infinities and a NaN.
void test_kv_store_f16(Gpu& gpu, uint32_t rows, uint32_t width) {
  run("kv_store_f16 rows=" + std::to_string(rows) + " width=" + std::to_string(width), [&] {
    const uint32_t ldx = width + 3, words = (width + 1) / 2, ldc = words + 2, x_off = 5, c_off = 3;
    std::vector<float> x = random_f32(x_off + static_cast<size_t>(rows) * ldx, 100.f);
    const float edges[] = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -(2048.f + 1.f), 0x1p-24f, 0x1p-25f, 0x3p-25f, -0x1.8p-20f,
                           6.1e-5f, 65504.f, 65519.f, 65520.f, -1e9f, INFINITY, -INFINITY, 0x1p-130f, -0.f, NAN};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0] && i < x.size() - x_off; ++i) x[x_off + i] = edges[i];
    const uint32_t sentinel = 0xdeadbeefu;
    std::vector<uint32_t> want(c_off + static_cast<size_t>(rows) * ldc + 1, sentinel);
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<f16_t> halves(words * 2, 0);
      kernels_scalar().to_f16(x.data() + x_off + r * ldx, halves.data(), width);
      for (uint32_t w = 0; w < words; ++w) want[c_off + r * ldc + w] = halves[2 * w] | (uint32_t{halves[2 * w + 1]} << 16);
    }
    auto X = gpu.upload(x);
    auto C = gpu.upload(std::vector<uint32_t>(want.size(), sentinel));
    gpu.ops->kv_store_f16(*gpu.batch, {X.get(), x_off}, ldx, {C.get(), c_off}, ldc, rows, width);
    gpu.batch->run();
    const std::vector<uint32_t> got = gpu.download<uint32_t>(*C, want.size());
    auto is_nan = [](uint32_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; };
    auto same_half = [&](uint32_t a, uint32_t b) { return a == b || (is_nan(a) && is_nan(b)); };
    for (size_t i = 0; i < want.size(); ++i) {
      if (!same_half(got[i] & 0xffffu, want[i] & 0xffffu) || !same_half(got[i] >> 16, want[i] >> 16)) {
        char buf[120];
        std::snprintf(buf, sizeof buf, "word %zu: got 0x%08x, want 0x%08x", i, got[i], want[i]);
        return std::string(buf);
      }
    }
    return std::string();
  });
}

void test_swiglu_axpy(Gpu& gpu, uint32_t n) {
  run("swiglu and axpy n=" + std::to_string(n), [&] {
    const std::vector<float> gate = random_f32(n + 1, 4.f), up = random_f32(n + 2), y0 = random_f32(n);
    std::vector<float> want(n);
    kernels_scalar().swiglu(gate.data() + 1, up.data() + 2, want.data(), n);
    std::vector<float> want_y = y0;
    kernels_scalar().axpy(want_y.data(), -0.75f, want.data(), n);
    auto G = gpu.upload(gate);
    auto U = gpu.upload(up);
    auto O = gpu.upload(std::vector<float>(n));
    auto Y = gpu.upload(y0);
    gpu.ops->swiglu(*gpu.batch, {G.get(), 1}, {U.get(), 2}, {O.get(), 0}, n);
    gpu.ops->axpy(*gpu.batch, {Y.get(), 0}, -0.75f, {O.get(), 0}, n);
    gpu.batch->run();
    const std::string e = compare(gpu.download<float>(*O, n), want);
    return e.empty() ? compare(gpu.download<float>(*Y, n), want_y) : e;
  });
}

// block: table rows per binding, each block in its own buffer at an odd element (the weight arena's
// split of an embedding larger than the device can bind); vocab for the whole table in one.
void test_embed(Gpu& gpu, uint32_t vocab, uint32_t hidden, uint32_t rows, uint32_t block) {
  run("embed vocab=" + std::to_string(vocab) + " hidden=" + std::to_string(hidden) + " rows per binding=" + std::to_string(block), [&] {
    const std::vector<bf16_t> table = random_bf16(static_cast<size_t>(vocab) * hidden);
    std::vector<int32_t> ids(rows);
    for (uint32_t r = 0; r < rows; ++r) ids[r] = static_cast<int32_t>((r * 7919u + 1u) % vocab);
    ids.back() = static_cast<int32_t>(vocab - 1);
    std::vector<float> want(static_cast<size_t>(rows) * hidden);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t j = 0; j < hidden; ++j) want[r * hidden + j] = bf16_to_f32(table[ids[r] * hidden + j]);
    auto I = gpu.upload(ids);
    auto O = gpu.upload(std::vector<float>(want.size(), NAN));
    std::vector<std::unique_ptr<vk::Buffer>> blocks;
    for (uint32_t first = 0; first < vocab; first += block) {
      const uint32_t n = std::min(block, vocab - first);
      std::vector<bf16_t> part(1);
      part.insert(part.end(), table.begin() + static_cast<size_t>(first) * hidden, table.begin() + static_cast<size_t>(first + n) * hidden);
      blocks.push_back(gpu.upload(part));
      gpu.ops->embed(*gpu.batch, {blocks.back().get(), 1}, first, n, {I.get(), 0}, {O.get(), 0}, rows, hidden);
    }
    gpu.batch->run();
    return compare(gpu.download<float>(*O, want.size()), want);
  });
}

void test_router(Gpu& gpu, uint32_t rows, uint32_t experts, uint32_t top_k, bool norm_topk) {
  run("router_topk rows=" + std::to_string(rows) + " experts=" + std::to_string(experts) + " k=" +
          std::to_string(top_k) + (norm_topk ? " normalised" : ""),
      [&]() -> std::string {
        std::vector<float> logits = random_f32(static_cast<size_t>(rows) * experts, 2.f);
        // A row of equal logits: ties go to the lower expert index.
        for (uint32_t e = 0; e < experts; ++e) logits[e] = 0.5f;
        std::vector<int32_t> want_ids;
        std::vector<float> want_w;
        for (uint32_t r = 0; r < rows; ++r) {
          std::vector<float> s(logits.begin() + r * experts, logits.begin() + (r + 1) * experts);
          kernels_scalar().softmax(s.data(), experts);
          std::vector<int32_t> order(experts);
          for (uint32_t e = 0; e < experts; ++e) order[e] = static_cast<int32_t>(e);
          std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                            [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
          float norm = 1.f, sum = 0.f;
          for (uint32_t k = 0; k < top_k; ++k) sum += s[order[k]];
          if (norm_topk) norm = 1.f / (sum + 1e-20f);
          for (uint32_t k = 0; k < top_k; ++k) {
            want_ids.push_back(order[k]);
            want_w.push_back(s[order[k]] * norm * 2.5f);
          }
        }
        auto L = gpu.upload(logits);
        auto I = gpu.upload(std::vector<int32_t>(want_ids.size()));
        auto Wt = gpu.upload(std::vector<float>(want_w.size()));
        gpu.ops->router_topk(*gpu.batch, *L, *I, *Wt, rows, experts, top_k, norm_topk, 2.5f);
        gpu.batch->run();
        if (gpu.download<int32_t>(*I, want_ids.size()) != want_ids) return "expert ids differ";
        return compare(gpu.download<float>(*Wt, want_w.size()), want_w);
      });
}

void test_argmax(Gpu& gpu, uint32_t rows, uint32_t n) {
  run("argmax and log-probability (with bans) rows=" + std::to_string(rows) + " n=" + std::to_string(n), [&]() -> std::string {
    const uint32_t ld = n + 1;
    std::vector<float> x = random_f32(static_cast<size_t>(rows) * ld);
    // Row 0: a tie between two maxima (the first wins); row 1 (if any): every entry -inf.
    x[3 % n] = 50.f;
    x[(n - 1)] = 50.f;
    if (rows > 1)
      for (uint32_t i = 0; i < n; ++i) x[ld + i] = -INFINITY;
    // The last row (when there are 3 or more) bans its two best ids and an id past them.
    std::vector<int32_t> bans(rows * 2, 0), banned = {0};
    std::vector<int32_t> want(rows);
    for (uint32_t r = 0; r < rows; ++r) want[r] = static_cast<int32_t>(kernels_scalar().argmax(x.data() + r * ld, n));
    if (rows >= 3 && n >= 3) {
      const float* row = x.data() + (rows - 1) * ld;
      const int32_t first = want[rows - 1];
      int32_t second = first == 0 ? 1 : 0;
      for (uint32_t i = 0; i < n; ++i)
        if (static_cast<int32_t>(i) != first && row[i] > row[second]) second = static_cast<int32_t>(i);
      std::vector<int32_t> list = {first, second, static_cast<int32_t>(n - 1)};
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      bans[(rows - 1) * 2] = 1;
      bans[(rows - 1) * 2 + 1] = static_cast<int32_t>(list.size());
      banned.insert(banned.end(), list.begin(), list.end());
      int32_t pick = -1;
      for (uint32_t i = 0; i < n; ++i)
        if (!std::binary_search(list.begin(), list.end(), static_cast<int32_t>(i)) && (pick < 0 || row[i] > row[pick]))
          pick = static_cast<int32_t>(i);
      want[rows - 1] = pick;
    }
    auto X = gpu.upload(x);
    auto B = gpu.upload(std::vector<int32_t>(rows, -7));
    auto Bans = gpu.upload(bans);
    auto Banned = gpu.upload(banned);
    auto L = gpu.upload(std::vector<float>(rows, -7.f));
    gpu.ops->argmax(*gpu.batch, {X.get(), 0}, ld, {B.get(), 0}, {L.get(), 0}, *Bans, *Banned, rows, n);
    gpu.batch->run();
    const std::vector<int32_t> got = gpu.download<int32_t>(*B, rows);
    const std::vector<float> logprob = gpu.download<float>(*L, rows);
    for (uint32_t r = 0; r < rows; ++r) {
      if (got[r] != want[r]) return "row " + std::to_string(r) + ": got " + std::to_string(got[r]) + ", want " + std::to_string(want[r]);
      // The log-softmax over every id, banned ones included, in float64; a row of -inf has none.
      const float* row = x.data() + r * ld;
      const double mx = *std::max_element(row, row + n);
      if (mx == -INFINITY) continue;
      double sum = 0;
      for (uint32_t i = 0; i < n; ++i) sum += std::exp(row[i] - mx);
      const double expected = row[want[r]] - mx - std::log(sum);
      // F32 sums of n / 256 terms per invocation, then 8 merges, against logits up to 50 in size.
      if (!(std::fabs(logprob[r] - expected) <= 2e-5))
        return "row " + std::to_string(r) + ": log-probability " + std::to_string(logprob[r]) + ", want " + std::to_string(expected);
    }
    return "";
  });
}

void test_gather(Gpu& gpu, uint32_t rows, uint32_t width) {
  run("gather_rows rows=" + std::to_string(rows) + " width=" + std::to_string(width), [&] {
    const std::vector<float> x = random_f32(static_cast<size_t>(rows) * width);
    // Rows (repeated, unordered) at an odd offset of the row list.
    const std::vector<int32_t> list = {-1, static_cast<int32_t>(rows - 1), 0, static_cast<int32_t>(rows / 2), 0};
    const uint32_t n = 4;
    std::vector<float> gathered(static_cast<size_t>(n) * width);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < width; ++j) gathered[i * width + j] = x[list[i + 1] * width + j];
    auto X = gpu.upload(x);
    auto L = gpu.upload(list);
    auto G = gpu.upload(std::vector<float>(gathered.size()));
    gpu.ops->gather_rows(*gpu.batch, {X.get(), 0}, width, {L.get(), 1}, {G.get(), 0}, n, width);
    gpu.batch->run();
    return compare(gpu.download<float>(*G, gathered.size()), gathered);
  });
}

void test_bounds(Gpu& gpu) {
  run("an operand range outside its buffer is rejected before dispatch", [&]() -> std::string {
    auto small = gpu.upload(std::vector<float>(10));
    auto w = gpu.upload(std::vector<bf16_t>(8));
    try {
      gpu.ops->matmul_bf16(*gpu.batch, {small.get(), 0}, 4, {w.get(), 0}, {small.get(), 0}, 4, 3, 4, 4);
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
  if (!open_test_device(gpu, "shader tests", status)) return status;

  test_matmul(gpu, 1, 1, 1);
  test_matmul(gpu, 1, 77, 129);
  test_matmul(gpu, 5, 33, 65);
  test_matmul(gpu, 8, 100, 300);
  test_matmul(gpu, 9, 100, 300);
  test_matmul(gpu, 37, 70, 1001);
  test_matmul(gpu, 70, 45, 17);
  test_matmul_fast(gpu, 3, 65, 129);
  test_matmul_fast(gpu, 37, 70, 301);
  test_rmsnorm(gpu, 1, 1);
  test_rmsnorm(gpu, 7, 1281);
  test_rope(gpu, 9, 3, 2);
  test_rope(gpu, 13, 5, 34);
  test_attention(gpu, false, 5, 4, 2, 8, 3);
  test_attention(gpu, false, 7, 6, 2, 66, 200);
  test_attention(gpu, false, 3, 2, 1, 256, 65);
  test_kv_store_f16(gpu, 1, 1);
  test_kv_store_f16(gpu, 3, 17);
  test_kv_store_f16(gpu, 70, 130);
  test_attention(gpu, true, 5, 4, 2, 8, 3);
  test_attention(gpu, true, 7, 6, 3, 7, 130);
  test_attention(gpu, true, 3, 2, 1, 256, 65);
  test_swiglu_axpy(gpu, 1);
  test_swiglu_axpy(gpu, 70001);
  test_embed(gpu, 101, 65, 9, 101);
  test_embed(gpu, 101, 65, 9, 10);
  test_router(gpu, 11, 64, 6, false);
  test_router(gpu, 5, 7, 3, true);
  test_argmax(gpu, 3, 1);
  test_argmax(gpu, 4, 5001);
  test_gather(gpu, 5, 1);
  test_gather(gpu, 9, 300);
  test_bounds(gpu);
  return finish();
}
