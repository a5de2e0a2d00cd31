// The MoE shaders against host references on odd shapes: the grouping of top-k picks by expert
// (moe_align: exact lists), and the whole routed pass (grouping, gather, grouped gate / up / down
// products, SwiGLU, combine) against the CPU's scalar kernels: rows not a multiple of the block,
// experts with no rows, every row on one expert, top_k > 1, picks at an offset (a second pass).
// Runs on the first Vulkan device (llvmpipe in CI); skipped without one unless SCRIPTORIUM_REQUIRE_VULKAN=1.
#include <algorithm>
#include <cstdint>
#include <functional>
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
using vk::ShaderOps;

constexpr uint32_t kBlock = ShaderOps::kMoeBlockRows;

// Each row's top_k distinct experts, in the router's order (not sorted), and their weights.
struct Picks {
  uint32_t rows, top_k, experts;
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Picks drawn by `choose(row, k)`; weights in (0, 1].
Picks make_picks(uint32_t rows, uint32_t top_k, uint32_t experts, const std::function<int32_t(uint32_t, uint32_t)>& choose) {
  Picks p{rows, top_k, experts, {}, {}};
  std::uniform_real_distribution<float> weight(0.05f, 1.f);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t k = 0; k < top_k; ++k) {
      p.ids.push_back(choose(r, k));
      p.weights.push_back(weight(g_rng));
    }
  return p;
}

// Random distinct experts among the first `used` of them (the others get no rows).
Picks random_picks(uint32_t rows, uint32_t top_k, uint32_t experts, uint32_t used) {
  std::vector<int32_t> order(used);
  Picks p = make_picks(rows, top_k, experts, [&](uint32_t, uint32_t k) {
    if (k == 0) {
      for (uint32_t e = 0; e < used; ++e) order[e] = static_cast<int32_t>(e);
      std::shuffle(order.begin(), order.end(), g_rng);
    }
    return order[k];
  });
  return p;
}

// What moe_align must write, built the obvious way.
struct Grouping {
  std::vector<int32_t> entry_rows, blocks, row_slots;
  std::vector<float> entry_weights;
};

Grouping host_grouping(const Picks& p, uint32_t capacity) {
  Grouping g{std::vector<int32_t>(capacity, 0), {}, std::vector<int32_t>(p.rows * p.top_k, -1), std::vector<float>(capacity, 0.f)};
  for (uint32_t b = 0; b < capacity / kBlock; ++b) g.blocks.insert(g.blocks.end(), {-1, 0});
  uint32_t entry = 0;
  for (uint32_t e = 0; e < p.experts; ++e) {
    const uint32_t start = entry;
    for (uint32_t r = 0; r < p.rows; ++r)
      for (uint32_t k = 0; k < p.top_k; ++k) {
        if (p.ids[r * p.top_k + k] != static_cast<int32_t>(e)) continue;
        uint32_t rank = 0;
        for (uint32_t j = 0; j < p.top_k; ++j) rank += p.ids[r * p.top_k + j] < static_cast<int32_t>(e) ? 1 : 0;
        g.row_slots[r * p.top_k + rank] = static_cast<int32_t>(entry);
        g.entry_rows[entry] = static_cast<int32_t>(r);
        g.entry_weights[entry++] = p.weights[r * p.top_k + k];
      }
    const uint32_t count = entry - start;
    entry = start + (count + kBlock - 1) / kBlock * kBlock;
    for (uint32_t b = start / kBlock; b < entry / kBlock; ++b) {
      g.blocks[b * 2] = static_cast<int32_t>(e);
      g.blocks[b * 2 + 1] = static_cast<int32_t>(std::min(kBlock, count - (b * kBlock - start)));
    }
  }
  return g;
}

struct RoutingBuffers {
  std::unique_ptr<vk::Buffer> entry_rows, entry_weights, blocks, row_slots;
};

// Runs moe_align on picks stored after `prefix` rows of other picks (as a second pass reads them).
RoutingBuffers align_on_device(Gpu& gpu, const Picks& p, uint32_t capacity, uint32_t prefix) {
  std::vector<int32_t> ids(prefix * p.top_k, static_cast<int32_t>(p.experts - 1));
  std::vector<float> weights(ids.size(), 9.f);
  ids.insert(ids.end(), p.ids.begin(), p.ids.end());
  weights.insert(weights.end(), p.weights.begin(), p.weights.end());
  auto I = gpu.upload(ids);
  auto Wt = gpu.upload(weights);
  // Stale values in every output, as scratch buffers hold from an earlier pass.
  RoutingBuffers out{gpu.upload(std::vector<int32_t>(capacity, 7)), gpu.upload(std::vector<float>(capacity, 7.f)),
                     gpu.upload(std::vector<int32_t>(capacity / kBlock * 2, 7)), gpu.upload(std::vector<int32_t>(p.ids.size(), 7))};
  gpu.ops->moe_align(*gpu.batch, *I, *Wt, static_cast<uint64_t>(prefix) * p.top_k, *out.entry_rows, *out.entry_weights,
                     *out.blocks, *out.row_slots, p.rows * p.top_k, p.top_k, p.experts, capacity);
  gpu.batch->run();
  return out;
}

std::string describe(const std::string& what, const Picks& p) {
  return what + " rows=" + std::to_string(p.rows) + " experts=" + std::to_string(p.experts) + " k=" + std::to_string(p.top_k);
}

void test_align(Gpu& gpu, const std::string& what, const Picks& p, uint32_t prefix) {
  run(describe("moe_align " + what, p), [&]() -> std::string {
    // One block more than needed: the entries past the last expert's must be padding too.
    const uint32_t capacity = static_cast<uint32_t>(ShaderOps::moe_capacity(p.ids.size(), p.experts)) + kBlock;
    const Grouping want = host_grouping(p, capacity);
    RoutingBuffers got = align_on_device(gpu, p, capacity, prefix);
    if (gpu.download<int32_t>(*got.entry_rows, capacity) != want.entry_rows) return "entry rows differ";
    if (gpu.download<float>(*got.entry_weights, capacity) != want.entry_weights) return "entry weights differ";
    if (gpu.download<int32_t>(*got.blocks, want.blocks.size()) != want.blocks) return "blocks differ";
    if (gpu.download<int32_t>(*got.row_slots, want.row_slots.size()) != want.row_slots) return "row slots differ";
    return "";
  });
}

// x[r] += sum over row r's experts in index order of weight * down(silu(gate x) * up x), on the
// CPU's scalar kernels, against the device's routed pass over the same picks. range: experts per
// product dispatch (a stack split into bindings of expert ranges, as the weight arena splits one
// larger than the device can bind); the experts' count for the whole stack in one.
void test_routed_pass(Gpu& gpu, const std::string& what, const Picks& p, uint32_t hidden, uint32_t width, uint32_t range) {
  run(describe("routed experts " + what, p) + " hidden=" + std::to_string(hidden) + " width=" + std::to_string(width) +
          " experts per binding=" + std::to_string(range),
      [&]() -> std::string {
        const uint32_t E = p.experts, H = hidden, W = width, K = p.top_k;
        const std::vector<float> norm = random_f32(static_cast<size_t>(p.rows) * H), x0 = random_f32(norm.size());
        const std::vector<bf16_t> gate = random_bf16(static_cast<size_t>(E) * W * H, 0.2f),
                                  up = random_bf16(gate.size(), 0.2f), down = random_bf16(gate.size(), 0.2f);
        std::vector<float> want = x0, g(W), u(W), o(H);
        for (uint32_t r = 0; r < p.rows; ++r) {
          std::vector<std::pair<int32_t, float>> mine;
          for (uint32_t k = 0; k < K; ++k) mine.emplace_back(p.ids[r * K + k], p.weights[r * K + k]);
          std::sort(mine.begin(), mine.end());
          for (const auto& [e, weight] : mine) {
            const size_t at = static_cast<size_t>(e) * W * H;
            kernels_scalar().gemm_bf16(norm.data() + r * H, H, gate.data() + at, g.data(), W, 1, 0, W, H);
            kernels_scalar().gemm_bf16(norm.data() + r * H, H, up.data() + at, u.data(), W, 1, 0, W, H);
            kernels_scalar().swiglu(g.data(), u.data(), g.data(), W);
            kernels_scalar().gemm_bf16(g.data(), W, down.data() + at, o.data(), H, 1, 0, H, W);
            kernels_scalar().axpy(want.data() + r * H, weight, o.data(), H);
          }
        }
        const uint32_t capacity = static_cast<uint32_t>(ShaderOps::moe_capacity(p.ids.size(), E));
        RoutingBuffers routing = align_on_device(gpu, p, capacity, 0);
        // The stacked experts start at an odd element of their buffer, as a weight arena may place them.
        std::vector<bf16_t> stacks(1);
        for (const auto* m : {&gate, &up, &down}) stacks.insert(stacks.end(), m->begin(), m->end());
        auto S = gpu.upload(stacks);
        const uint64_t stack = gate.size();
        auto Norm = gpu.upload(norm);
        auto X = gpu.upload(x0);
        auto In = gpu.upload(std::vector<float>(static_cast<size_t>(capacity) * H, NAN));
        auto G = gpu.upload(std::vector<float>(static_cast<size_t>(capacity) * W, NAN));
        auto U = gpu.upload(std::vector<float>(static_cast<size_t>(capacity) * W, NAN));
        auto O = gpu.upload(std::vector<float>(static_cast<size_t>(capacity) * H, NAN));
        vk::CommandBatch& b = *gpu.batch;
        gpu.ops->gather_rows(b, {Norm.get(), 0}, H, {routing.entry_rows.get(), 0}, {In.get(), 0}, capacity, H);
        const uint64_t each = static_cast<uint64_t>(W) * H;
        for (uint32_t e0 = 0; e0 < E; e0 += range) {
          const uint32_t n = std::min(range, E - e0);
          gpu.ops->moe_matmul_bf16(b, {In.get(), 0}, H, {S.get(), 1 + e0 * each}, e0, n, {G.get(), 0}, W, *routing.blocks, capacity, W, H);
          gpu.ops->moe_matmul_bf16(b, {In.get(), 0}, H, {S.get(), 1 + stack + e0 * each}, e0, n, {U.get(), 0}, W, *routing.blocks,
                                   capacity, W, H);
        }
        gpu.ops->swiglu(b, {G.get(), 0}, {U.get(), 0}, {G.get(), 0}, capacity * W);
        for (uint32_t e0 = 0; e0 < E; e0 += range)
          gpu.ops->moe_matmul_bf16(b, {G.get(), 0}, W, {S.get(), 1 + 2 * stack + e0 * each}, e0, std::min(range, E - e0), {O.get(), 0},
                                   H, *routing.blocks, capacity, H, W);
        gpu.ops->moe_combine(b, {X.get(), 0}, {O.get(), 0}, *routing.row_slots, *routing.entry_weights, p.rows, H, K, capacity);
        b.run();
        return compare(gpu.download<float>(*X, want.size()), want);
      });
}

void test_rejects(Gpu& gpu) {
  run("moe_align and moe_matmul_bf16 reject a capacity too small for the picks", [&]() -> std::string {
    const Picks p = random_picks(5, 2, 4, 4);
    auto I = gpu.upload(p.ids);
    auto Wt = gpu.upload(p.weights);
    auto Big = gpu.upload(std::vector<float>(4096));
    const uint32_t short_capacity = static_cast<uint32_t>(ShaderOps::moe_capacity(p.ids.size(), p.experts)) - kBlock;
    int refused = 0;
    try {
      gpu.ops->moe_align(*gpu.batch, *I, *Wt, 0, *Big, *Big, *Big, *Big, 10, 2, 4, short_capacity);
    } catch (const std::invalid_argument&) {
      ++refused;
    }
    try {  // blocks past the end of their buffer
      auto Blocks = gpu.upload(std::vector<int32_t>(2));
      gpu.ops->moe_matmul_bf16(*gpu.batch, {Big.get(), 0}, 4, {Big.get(), 0}, 0, 2, {Big.get(), 0}, 4, *Blocks, 16, 4, 4);
    } catch (const std::invalid_argument&) {
      ++refused;
    }
    gpu.batch->discard();
    return refused == 2 ? "" : "only " + std::to_string(refused) + " of 2 refused";
  });
}

}  // namespace

int main() {
  Gpu gpu;
  int status = 0;
  if (!open_test_device(gpu, "MoE shader tests", status)) return status;

  test_align(gpu, "random picks, some experts unused", random_picks(13, 3, 9, 6), 0);
  test_align(gpu, "after 5 rows of another pass", random_picks(21, 6, 64, 64), 5);
  test_align(gpu, "every row on experts 0 and last", make_picks(19, 2, 7, [](uint32_t, uint32_t k) { return k == 0 ? 6 : 0; }), 0);
  test_align(gpu, "one row", random_picks(1, 4, 256, 256), 3);
  test_routed_pass(gpu, "random picks, some experts unused", random_picks(13, 3, 9, 6), 65, 33, 9);
  test_routed_pass(gpu, "random picks, experts in bindings of 4", random_picks(13, 3, 9, 6), 65, 33, 4);
  test_routed_pass(gpu, "every row on one expert", make_picks(19, 1, 4, [](uint32_t, uint32_t) { return 2; }), 40, 24, 4);
  test_routed_pass(gpu, "decode step, top_k > 1", random_picks(1, 6, 64, 64), 64, 17, 64);
  test_routed_pass(gpu, "decode step, experts in bindings of 1", random_picks(1, 6, 64, 64), 64, 17, 1);
  test_routed_pass(gpu, "a batch of 8", random_picks(8, 2, 5, 5), 31, 9, 5);
  test_rejects(gpu);
  return finish();
}
