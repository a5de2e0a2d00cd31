// Vulkan physical devices (what `scriptorium devices` lists) and one logical device with a compute
// queue, which every buffer, pipeline and command batch of a model belongs to.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vulkan/instance.h"

namespace scriptorium::vk {

// Matrix-product shader paths: the portable one runs on every device with a compute queue; the
// cooperative-matrix one (matmul_bf16_coopmat.comp, GL_NV_cooperative_matrix) where the device can run it.
inline constexpr const char* kPortablePath = "portable";
inline constexpr const char* kCooperativeMatrixPath = "cooperative-matrix";

// What a device reports that matmul_bf16_coopmat.comp needs: its SPIR-V declares CooperativeMatrixNV,
// Float16 and VulkanMemoryModel, and it runs four 32-wide subgroups of 16x16x16 fragments.
struct CooperativeMatrixSupport {
  bool nv_extension = false;             // VK_NV_cooperative_matrix offered
  bool khr_extension = false;            // VK_KHR_cooperative_matrix offered (no shader of ours uses it yet)
  bool float16_extension = false;        // VK_KHR_shader_float16_int8 offered
  bool memory_model_extension = false;   // VK_KHR_vulkan_memory_model offered
  bool cooperative_matrix = false;       // the features those extensions add, as the device reports them
  bool shader_float16 = false;
  bool vulkan_memory_model = false;
  uint32_t subgroup_size = 0;
  bool fp16_16x16x16 = false;            // a subgroup-scope 16x16x16 shape: FP16 A and B, FP32 C and D
};

// The path matmul_bf16 takes on a device: kCooperativeMatrixPath when it offers everything
// CooperativeMatrixSupport lists (VK_KHR_cooperative_matrix alone is not enough: the shader is
// GL_NV_cooperative_matrix, the one Debian's glslc compiles), else kPortablePath.
const char* choose_matmul_path(const CooperativeMatrixSupport& support);

struct DeviceInfo {
  int index = 0;                  // position in vkEnumeratePhysicalDevices order (gpu:N)
  std::string name;               // e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;               // discrete, integrated, virtual, cpu or other
  std::string api_version;        // "1.3.230"
  uint64_t device_local_bytes = 0;  // the largest device-local heap
  uint64_t memory_budget_bytes = 0;  // what a model may allocate on it (memory_budget_bytes())
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 0;  // maxComputeSharedMemorySize
  uint32_t max_binding_bytes = 0;  // maxStorageBufferRange: the largest buffer one shader binding may span
  bool has_compute_queue = false;
  // Matrix-product shader paths this build can run on the device ("portable" wherever there is a
  // compute queue), and the cooperative-matrix extensions the device offers.
  std::vector<std::string> shader_paths;
  std::vector<std::string> cooperative_matrix_extensions;
  CooperativeMatrixSupport cooperative_matrix;
  std::string matmul_path;  // choose_matmul_path(cooperative_matrix), "" without a compute queue
};

// The path a model's matrix products take: in exact precision the portable one (F32 products, the
// path the tests compare with the CPU engine), in fast precision the device's choice (the
// cooperative-matrix path where it runs, about 22 significant bits).
const char* model_matmul_path(const DeviceInfo& info, bool fast_precision);

// An allocation that does not fit the device memory budget, or that the driver refused for lack of
// memory (VK_ERROR_OUT_OF_DEVICE_MEMORY): the call that needed it fails, the device stays usable.
class DeviceMemoryError : public VulkanError {
 public:
  using VulkanError::VulkanError;
};

// The environment variable that caps the budget, in MiB (one GPU shared by several workers, tests).
inline constexpr const char* kMemoryCapVariable = "SCRIPTORIUM_GPU_MEMORY_MB";

// The budget rule: 90% of the largest device-local heap (the rest is left to the driver and other
// contexts), or cap_mib MiB when given (the value of kMemoryCapVariable, null or empty when unset)
// and smaller. Throws VulkanError when cap_mib is not a positive integer.
uint64_t memory_budget_bytes(uint64_t heap_bytes, const char* cap_mib);

std::vector<DeviceInfo> list_devices(const Instance& instance);

// The device `auto` picks: the first discrete GPU with a compute queue, else -1 (the CPU engine).
int pick_auto_device(const std::vector<DeviceInfo>& devices);

class Device {
 public:
  // Opens device `index` (see list_devices); throws VulkanError when it is absent or has no compute queue.
  Device(std::shared_ptr<Instance> instance, int index);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Instance& api() const { return *instance_; }
  const DeviceInfo& info() const { return info_; }
  VkDevice handle() const { return device_; }
  VkCommandPool command_pool() const { return command_pool_; }
  uint32_t max_storage_range() const { return max_storage_range_; }
  uint32_t max_workgroups_x() const { return max_workgroups_x_; }

  // A memory type index with all of `required` among the types allowed by `type_bits`, preferring
  // one that also has `preferred`; throws VulkanError when none fits.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

  // Device memory: the budget (DeviceInfo::memory_budget_bytes) and the bytes of the buffers that
  // exist now. Every Buffer reserves its allocation here first: reserve_memory throws
  // DeviceMemoryError, naming the numbers, when it does not fit; release_memory gives it back.
  uint64_t memory_budget() const { return info_.memory_budget_bytes; }
  uint64_t memory_used() const { return memory_used_.load(); }
  void reserve_memory(uint64_t bytes);
  void release_memory(uint64_t bytes) { memory_used_ -= bytes; }

  // Submits one recorded command buffer and waits for it to finish.
  void submit_and_wait(VkCommandBuffer commands);
  // How many times submit_and_wait has waited for the queue since the device was opened: the host
  // round trips a model pass makes (each stalls a real GPU until its queue drains).
  uint64_t queue_waits() const { return queue_waits_.load(); }

 private:
  std::shared_ptr<Instance> instance_;
  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  uint32_t max_storage_range_ = 0, max_workgroups_x_ = 0;
  std::atomic<uint64_t> memory_used_{0};  // buffers are freed on whichever thread drops them last
  std::atomic<uint64_t> queue_waits_{0};
};

}  // namespace scriptorium::vk
