#include "probes/gpu_ceilings.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_probe_shaders.h"
#include "vulkan/buffers.h"
#include "vulkan/shader_ops.h"

namespace scriptorium {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Best rate of `work` units per second over rounds of `record` (recorded into batch, then run),
// each round long enough to hide the submission, for at least `seconds` in all and `min_rounds` rounds.
template <typename Record>
double best_rate(vk::CommandBatch& batch, Record record, double work, double seconds, int min_rounds) {
  const auto t0 = Clock::now();
  record();
  batch.run();
  const double once = std::max(seconds_since(t0), 1e-6);
  const int repeats = std::max(1, static_cast<int>(0.02 / once));
  double best = 0;
  const auto start = Clock::now();
  for (int round = 0; round < min_rounds || seconds_since(start) < seconds; ++round) {
    const auto t = Clock::now();
    for (int i = 0; i < repeats; ++i) record();
    batch.run();
    best = std::max(best, work * repeats / seconds_since(t));
  }
  return best;
}

double read_bandwidth(vk::Device& device, vk::CommandBatch& batch, uint64_t bytes, int passes) {
  constexpr uint32_t kGroups = 4096, kLocal = 256;
  vk::Pipeline read(device, vk::spirv::read_bandwidth, 2, 4);
  vk::Buffer src(device, bytes), dst(device, uint64_t{kGroups} * kLocal * 4);
  const uint32_t words = static_cast<uint32_t>(bytes / 16);
  return best_rate(batch, [&] { batch.dispatch(read, {&src, &dst}, &words, kGroups); }, static_cast<double>(words) * 16 / 1e9,
                   0, passes);
}

double matmul_gflops(vk::Device& device, vk::Transfer& transfer, vk::CommandBatch& batch, const std::string& path,
                     uint32_t side, double seconds) {
  vk::ShaderOps ops(device, path, Precision::Fast);
  const uint64_t n = uint64_t{side} * side;
  vk::Buffer x(device, n * 4), w(device, n * 2), y(device, n * 4);
  // Small finite values everywhere (speed does not depend on them; uninitialised memory might hold NaNs).
  std::vector<float> ones(n, 0.5f);
  transfer.upload(x, 0, ones.data(), n * 4);
  transfer.upload(w, 0, ones.data(), n * 2);
  return best_rate(batch, [&] { ops.matmul_bf16(batch, {&x, 0}, side, {&w, 0}, {&y, 0}, side, side, side, side); },
                   2.0 * static_cast<double>(n) * side / 1e9, seconds, 3);
}

}  // namespace

void GpuCeilingOptions::validate() const {
  if (device < 0) throw std::invalid_argument("device must be >= 0");
  if (buffer_bytes < (int64_t{1} << 20) || buffer_bytes > (int64_t{1} << 36)) throw std::invalid_argument("bufferBytes must be in [1 MiB, 64 GiB]");
  if (passes < 1) throw std::invalid_argument("passes must be >= 1");
  if (matmul_side < 64 || matmul_side > 16384 || matmul_side % 64 != 0) throw std::invalid_argument("matmulSide must be a multiple of 64 in [64, 16384]");
  if (!(seconds > 0 && seconds <= 60)) throw std::invalid_argument("seconds must be in (0, 60]");
}

GpuCeilings measure_gpu_ceilings(const GpuCeilingOptions& options) {
  options.validate();
  auto instance = std::make_shared<vk::Instance>();
  vk::Device device(instance, options.device);
  vk::Transfer transfer(device);
  vk::CommandBatch batch(device);
  GpuCeilings out;
  out.device = device.info().name;
  // Within what one binding can address, and what a 32-bit count of 16-byte words reaches.
  out.buffer_bytes = std::min<int64_t>({options.buffer_bytes, device.max_storage_range(), int64_t{UINT32_MAX} * 16}) / 16 * 16;
  out.read_gbps = read_bandwidth(device, batch, static_cast<uint64_t>(out.buffer_bytes), options.passes);
  for (const std::string& path : device.info().shader_paths)
    out.matmul.push_back({path, matmul_gflops(device, transfer, batch, path, static_cast<uint32_t>(options.matmul_side), options.seconds)});
  return out;
}

}  // namespace scriptorium
