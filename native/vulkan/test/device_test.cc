// The device's rules, apart from the shaders: the memory budget (the rule, and buffers refused past it
// while the device stays usable). Runs on the first Vulkan device (llvmpipe in CI); the rule checks
// need none. Without a device the device checks are skipped, unless SCRIPTORIUM_REQUIRE_VULKAN=1.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "buffers.h"
#include "../../test/test_harness.h"

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

}  // namespace

int main() {
  test_budget_rule();
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
  return finish();
}
