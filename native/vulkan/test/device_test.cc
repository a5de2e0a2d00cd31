// The device's rules, apart from the shaders: the memory budget (the rule, and buffers refused past it
// while the device stays usable) and the choice of the matrix-product path (from what a device
// reports; the cooperative-matrix shader is compiled and embedded, but llvmpipe cannot run it).
// Runs on the first Vulkan device (llvmpipe in CI); the rule checks need none. Without a device the device checks are skipped, unless SCRIPTORIUM_REQUIRE_VULKAN=1.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test/test_harness.h"
#include "vulkan/buffers.h"
#include "vulkan/shader_ops.h"
#include "vulkan_shaders.h"

using namespace scriptorium;

namespace {

using scriptorium_test::finish;
using scriptorium_test::run;

constexpr uint64_t kMiB = uint64_t{1} << 20;

void test_budget_rule() {
  run("budget: 90% of the heap without a cap", [] {
    const uint64_t got = vk::memory_budget_bytes(1000 * kMiB, nullptr);
    return got == 900 * kMiB ? std::string() : "got " + std::to_string(got);
  });
  run("budget: an empty cap is no cap", [] {
    return vk::memory_budget_bytes(1000 * kMiB, "") == 900 * kMiB ? "" : "wrong budget";
  });
  run("budget: a smaller cap wins, a larger one does not", [] {
    if (vk::memory_budget_bytes(1000 * kMiB, "300") != 300 * kMiB) return "cap 300 MiB ignored";
    if (vk::memory_budget_bytes(1000 * kMiB, "5000") != 900 * kMiB) return "cap above the heap raised the budget";
    return "";
  });
  run("budget: a cap that is no positive number of MiB is refused, naming the variable", [] {
    for (const char* bad : {"0", "-5", "12x", "1.5", " 7", "99999999999999999999"}) {
      try {
        vk::memory_budget_bytes(1000 * kMiB, bad);
        return std::string("accepted \"") + bad + "\"";
      } catch (const vk::VulkanError& e) {
        if (std::string(e.what()).find(vk::kMemoryCapVariable) == std::string::npos) return std::string("message: ") + e.what();
      }
    }
    return std::string();
  });
}

void test_budget_on_device(const std::shared_ptr<vk::Instance>& instance) {
  setenv(vk::kMemoryCapVariable, "8", 1);
  vk::Device device(instance, 0);
  unsetenv(vk::kMemoryCapVariable);
  run("device: the cap sets the budget", [&] {
    return device.memory_budget() == 8 * kMiB ? std::string() : "budget " + std::to_string(device.memory_budget());
  });
  run("device: buffers count against the budget while they exist", [&] {
    const uint64_t before = device.memory_used();
    {
      vk::Buffer buffer(device, 3 * kMiB);
      if (device.memory_used() < before + 3 * kMiB) return std::string("a 3 MiB buffer was not counted");
    }
    return std::string(device.memory_used() == before ? "" : "the freed buffer is still counted");
  });
  run("device: a buffer past the budget is a DeviceMemoryError naming the device, and nothing is lost", [&] {
    vk::Buffer kept(device, 5 * kMiB);
    const uint64_t before = device.memory_used();
    try {
      vk::Buffer too_big(device, 4 * kMiB);
      return std::string("a 4 MiB buffer fit beside 5 MiB in an 8 MiB budget");
    } catch (const vk::DeviceMemoryError& e) {
      const std::string message = e.what();
      if (message.find("out of device memory on " + device.info().name) != 0) return "message: " + message;
    }
    if (device.memory_used() != before) return std::string("the refused buffer stayed counted");
    vk::Buffer fits(device, 2 * kMiB);  // what still fits is still allocated
    return std::string();
  });
}

// Everything matmul_bf16_coopmat.comp needs, as an H100's driver reports it.
vk::CooperativeMatrixSupport full_support() {
  vk::CooperativeMatrixSupport s;
  s.nv_extension = s.khr_extension = s.float16_extension = s.memory_model_extension = true;
  s.cooperative_matrix = s.shader_float16 = s.vulkan_memory_model = s.fp16_16x16x16 = true;
  s.subgroup_size = 32;
  return s;
}

void test_matmul_path_choice() {
  run("path: a device with everything the shader needs takes the cooperative-matrix path", [] {
    return std::string(vk::choose_matmul_path(full_support()) == std::string(vk::kCooperativeMatrixPath) ? "" : "portable chosen");
  });
  run("path: any one thing missing leaves the portable path", [] {
    std::vector<std::pair<const char*, void (*)(vk::CooperativeMatrixSupport&)>> missing = {
        {"VK_NV_cooperative_matrix", [](vk::CooperativeMatrixSupport& s) { s.nv_extension = false; }},
        {"VK_KHR_shader_float16_int8", [](vk::CooperativeMatrixSupport& s) { s.float16_extension = false; }},
        {"VK_KHR_vulkan_memory_model", [](vk::CooperativeMatrixSupport& s) { s.memory_model_extension = false; }},
        {"the cooperativeMatrix feature", [](vk::CooperativeMatrixSupport& s) { s.cooperative_matrix = false; }},
        {"shaderFloat16", [](vk::CooperativeMatrixSupport& s) { s.shader_float16 = false; }},
        {"vulkanMemoryModel", [](vk::CooperativeMatrixSupport& s) { s.vulkan_memory_model = false; }},
        {"32-wide subgroups (AMD's 64)", [](vk::CooperativeMatrixSupport& s) { s.subgroup_size = 64; }},
        {"the FP16 16x16x16 shape", [](vk::CooperativeMatrixSupport& s) { s.fp16_16x16x16 = false; }},
    };
    for (const auto& [what, drop] : missing) {
      vk::CooperativeMatrixSupport s = full_support();
      drop(s);
      if (vk::choose_matmul_path(s) != std::string(vk::kPortablePath)) return std::string("chosen without ") + what;
    }
    return std::string();
  });
  run("path: VK_KHR_cooperative_matrix alone (the shader is NV) leaves the portable path", [] {
    vk::CooperativeMatrixSupport s = full_support();
    s.nv_extension = false;
    return std::string(vk::choose_matmul_path(s) == std::string(vk::kPortablePath) ? "" : "cooperative-matrix chosen");
  });
  run("path: a model takes the cooperative-matrix path in fast precision only, the portable one in exact", [] {
    vk::DeviceInfo offers, lacks;
    offers.matmul_path = vk::kCooperativeMatrixPath;
    lacks.matmul_path = vk::kPortablePath;
    const bool ok = vk::model_matmul_path(offers, true) == std::string(vk::kCooperativeMatrixPath) &&
                    vk::model_matmul_path(offers, false) == std::string(vk::kPortablePath) &&
                    vk::model_matmul_path(lacks, true) == std::string(vk::kPortablePath) &&
                    vk::model_matmul_path(lacks, false) == std::string(vk::kPortablePath);
    return std::string(ok ? "" : "wrong path");
  });
  run("path: the cooperative-matrix shader is embedded, declaring CooperativeMatrixNV", [] {
    constexpr uint32_t kOpCapability = (2u << 16) | 17u, kCooperativeMatrixNV = 5357;
    const vk::ShaderCode& code = vk::spirv::matmul_bf16_coopmat;
    const size_t words = code.bytes / 4;
    if (words < 5 || code.words[0] != 0x07230203u) return std::string("not SPIR-V");
    for (size_t i = 5; i + 1 < words; ++i)
      if (code.words[i] == kOpCapability && code.words[i + 1] == kCooperativeMatrixNV) return std::string();
    return std::string("no OpCapability CooperativeMatrixNV");
  });
}

void test_path_on_device(const std::shared_ptr<vk::Instance>& instance) {
  vk::Device device(instance, 0);
  run("device: its paths list the portable one, and the one matrix products take", [&] {
    const vk::DeviceInfo& info = device.info();
    if (info.shader_paths.empty() || info.shader_paths[0] != vk::kPortablePath) return std::string("portable not listed first");
    if (std::find(info.shader_paths.begin(), info.shader_paths.end(), info.matmul_path) == info.shader_paths.end())
      return "the chosen path " + info.matmul_path + " is not listed";
    if (vk::ShaderOps(device).matmul_path() != vk::kPortablePath) return std::string("exact precision left the portable path");
    return std::string(vk::ShaderOps(device, "", Precision::Fast).matmul_path() == info.matmul_path ? "" : "ShaderOps took another path");
  });
  run("device: the cooperative-matrix path is refused where the device did not choose it", [&] {
    if (device.info().matmul_path == vk::kCooperativeMatrixPath) return std::string();  // a GPU that offers it
    try {
      vk::ShaderOps ops(device, vk::kCooperativeMatrixPath, Precision::Fast);
      return std::string("accepted");
    } catch (const vk::VulkanError& e) {
      return std::string(std::string(e.what()).find("cannot run the cooperative-matrix path") != std::string::npos ? "" : e.what());
    }
  });
  run("device: the cooperative-matrix path is refused in exact precision, on any device", [&] {
    try {
      vk::ShaderOps ops(device, vk::kCooperativeMatrixPath, Precision::Exact);
      return std::string("accepted");
    } catch (const vk::VulkanError& e) {
      return std::string(std::string(e.what()).find("fast precision only") != std::string::npos ? "" : e.what());
    }
  });
}

}  // namespace

int main() {
  test_budget_rule();
  test_matmul_path_choice();
  std::shared_ptr<vk::Instance> instance;
  try {
    instance = std::make_shared<vk::Instance>();
    vk::Device probe(instance, 0);
  } catch (const std::exception& e) {
    const char* require = std::getenv("SCRIPTORIUM_REQUIRE_VULKAN");
    const bool required = require && *require == '1';
    std::printf("%s device tests: no Vulkan device: %s\n", required ? "FAIL" : "skip", e.what());
    return required ? 1 : finish();
  }
  test_budget_on_device(instance);
  test_path_on_device(instance);
  return finish();
}
