#include "vulkan/device.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace scriptorium::vk {

namespace {

std::vector<VkPhysicalDevice> physical_devices(const Instance& vk) {
  uint32_t count = 0;
  check(vk.vkEnumeratePhysicalDevices(vk.handle(), &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  check(vk.vkEnumeratePhysicalDevices(vk.handle(), &count, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(count);
  return devices;
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int compute_queue_family(const Instance& vk, VkPhysicalDevice device) {
  uint32_t count = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  for (uint32_t i = 0; i < count; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

CooperativeMatrixSupport cooperative_matrix_support(const Instance& vk, VkPhysicalDevice device, uint32_t subgroup_size) {
  CooperativeMatrixSupport support;
  support.subgroup_size = subgroup_size;
  uint32_t count = 0;
  vk.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vk.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data());
  for (const VkExtensionProperties& e : extensions) {
    const std::string name = e.extensionName;
    support.khr_extension |= name == "VK_KHR_cooperative_matrix";
    support.nv_extension |= name == "VK_NV_cooperative_matrix";
    support.float16_extension |= name == "VK_KHR_shader_float16_int8";
    support.memory_model_extension |= name == "VK_KHR_vulkan_memory_model";
  }
  if (!support.nv_extension || !support.float16_extension || !support.memory_model_extension ||
      !vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
    return support;
  // Structures of extensions the device offers, and only those, are chained into the queries.
  VkPhysicalDeviceCooperativeMatrixFeaturesNV matrix{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  matrix.pNext = &float16;
  float16.pNext = &model;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &matrix;
  vk.vkGetPhysicalDeviceFeatures2(device, &features);
  support.cooperative_matrix = matrix.cooperativeMatrix;
  support.shader_float16 = float16.shaderFloat16;
  support.vulkan_memory_model = model.vulkanMemoryModel;
  count = 0;
  vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, nullptr);
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, shapes.data());
  for (const VkCooperativeMatrixPropertiesNV& s : shapes)
    support.fp16_16x16x16 |= s.MSize == 16 && s.NSize == 16 && s.KSize == 16 && s.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                             s.BType == VK_COMPONENT_TYPE_FLOAT16_NV && s.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                             s.DType == VK_COMPONENT_TYPE_FLOAT32_NV && s.scope == VK_SCOPE_SUBGROUP_NV;
  return support;
}

DeviceInfo describe(const Instance& vk, VkPhysicalDevice device, int index) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &subgroup;
  vk.vkGetPhysicalDeviceProperties2(device, &properties);
  const VkPhysicalDeviceProperties& p = properties.properties;
  DeviceInfo info;
  info.index = index;
  info.name = p.deviceName;
  info.type = type_name(p.deviceType);
  info.api_version = std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." +
                     std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) + "." +
                     std::to_string(VK_API_VERSION_PATCH(p.apiVersion));
  info.subgroup_size = subgroup.subgroupSize;
  info.max_shared_bytes = p.limits.maxComputeSharedMemorySize;
  info.max_binding_bytes = p.limits.maxStorageBufferRange;
  VkPhysicalDeviceMemoryProperties memory;
  vk.vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<uint64_t>(info.device_local_bytes, memory.memoryHeaps[h].size);
  info.memory_budget_bytes = memory_budget_bytes(info.device_local_bytes, std::getenv(kMemoryCapVariable));
  info.has_compute_queue = compute_queue_family(vk, device) >= 0;
  info.cooperative_matrix = cooperative_matrix_support(vk, device, info.subgroup_size);
  if (info.cooperative_matrix.khr_extension) info.cooperative_matrix_extensions.push_back("VK_KHR_cooperative_matrix");
  if (info.cooperative_matrix.nv_extension) info.cooperative_matrix_extensions.push_back("VK_NV_cooperative_matrix");
  if (info.has_compute_queue) {
    info.shader_paths.push_back(kPortablePath);
    info.matmul_path = choose_matmul_path(info.cooperative_matrix);
    if (info.matmul_path != kPortablePath) info.shader_paths.push_back(info.matmul_path);
  }
  return info;
}

}  // namespace

const char* choose_matmul_path(const CooperativeMatrixSupport& s) {
  const bool runs = s.nv_extension && s.float16_extension && s.memory_model_extension && s.cooperative_matrix &&
                    s.shader_float16 && s.vulkan_memory_model && s.subgroup_size == 32 && s.fp16_16x16x16;
  return runs ? kCooperativeMatrixPath : kPortablePath;
}

const char* model_matmul_path(const DeviceInfo& info, bool fast_precision) {
  return fast_precision && info.matmul_path == kCooperativeMatrixPath ? kCooperativeMatrixPath : kPortablePath;
}

uint64_t memory_budget_bytes(uint64_t heap_bytes, const char* cap_mib) {
  const uint64_t share = heap_bytes / 10 * 9;
  if (cap_mib == nullptr || *cap_mib == '\0') return share;
  char* end = nullptr;
  errno = 0;
  const unsigned long long mib = std::strtoull(cap_mib, &end, 10);
  if (*end != '\0' || errno != 0 || mib == 0 || mib > (UINT64_MAX >> 20) || !std::isdigit(static_cast<unsigned char>(*cap_mib)))
    throw VulkanError(std::string(kMemoryCapVariable) + " must be a positive number of MiB (got \"" + cap_mib + "\")");
  return std::min<uint64_t>(share, mib << 20);
}

std::vector<DeviceInfo> list_devices(const Instance& instance) {
  std::vector<DeviceInfo> out;
  const std::vector<VkPhysicalDevice> devices = physical_devices(instance);
  for (size_t i = 0; i < devices.size(); ++i) out.push_back(describe(instance, devices[i], static_cast<int>(i)));
  return out;
}

int pick_auto_device(const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& d : devices)
    if (d.type == "discrete" && d.has_compute_queue) return d.index;
  return -1;
}

Device::Device(std::shared_ptr<Instance> instance, int index) : instance_(std::move(instance)) {
  const Instance& vk = *instance_;
  const std::vector<VkPhysicalDevice> devices = physical_devices(vk);
  if (devices.empty()) throw VulkanError("no Vulkan device found (is a Vulkan driver installed?)");
  if (index < 0 || index >= static_cast<int>(devices.size()))
    throw VulkanError("no Vulkan device gpu:" + std::to_string(index) + " (" + std::to_string(devices.size()) +
                      " device(s): gpu:0 to gpu:" + std::to_string(devices.size() - 1) + ")");
  physical_ = devices[index];
  info_ = describe(vk, physical_, index);
  const int family = compute_queue_family(vk, physical_);
  if (family < 0) throw VulkanError("Vulkan device " + info_.name + " has no compute queue");
  vk.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  VkPhysicalDeviceProperties properties;
  vk.vkGetPhysicalDeviceProperties(physical_, &properties);
  max_storage_range_ = properties.limits.maxStorageBufferRange;
  max_workgroups_x_ = properties.limits.maxComputeWorkGroupCount[0];

  const float priority = 1.f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = static_cast<uint32_t>(family);
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  // The cooperative-matrix shader's extensions and features, enabled only where it was chosen.
  const char* coop_extensions[] = {"VK_NV_cooperative_matrix", "VK_KHR_shader_float16_int8", "VK_KHR_vulkan_memory_model"};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV matrix{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (info_.matmul_path == kCooperativeMatrixPath) {
    matrix.cooperativeMatrix = VK_TRUE;
    float16.shaderFloat16 = VK_TRUE;
    model.vulkanMemoryModel = VK_TRUE;
    matrix.pNext = &float16;
    float16.pNext = &model;
    device_info.pNext = &matrix;
    device_info.enabledExtensionCount = 3;
    device_info.ppEnabledExtensionNames = coop_extensions;
  }
  check(vk.vkCreateDevice(physical_, &device_info, nullptr, &device_), "vkCreateDevice");
  vk.vkGetDeviceQueue(device_, queue_info.queueFamilyIndex, 0, &queue_);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_info.queueFamilyIndex;
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  try {
    check(vk.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_), "vkCreateCommandPool");
    check(vk.vkCreateFence(device_, &fence_info, nullptr, &fence_), "vkCreateFence");
  } catch (...) {
    if (command_pool_) vk.vkDestroyCommandPool(device_, command_pool_, nullptr);
    vk.vkDestroyDevice(device_, nullptr);
    throw;
  }
}

Device::~Device() {
  const Instance& vk = *instance_;
  vk.vkDestroyFence(device_, fence_, nullptr);
  vk.vkDestroyCommandPool(device_, command_pool_, nullptr);
  vk.vkDestroyDevice(device_, nullptr);
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0) throw VulkanError("Vulkan device " + info_.name + " has no suitable memory type");
  return static_cast<uint32_t>(fallback);
}

namespace {

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

void Device::reserve_memory(uint64_t bytes) {
  uint64_t used = memory_used_.load();
  do {
    if (bytes > info_.memory_budget_bytes || used > info_.memory_budget_bytes - bytes)
      throw DeviceMemoryError("out of device memory on " + info_.name + ": " + mib(bytes) + " more do not fit, " + mib(used) +
                              " of its " + mib(info_.memory_budget_bytes) + " budget are in use (" + kMemoryCapVariable +
                              " caps the budget; 90% of the device's memory without it)");
  } while (!memory_used_.compare_exchange_weak(used, used + bytes));
}

void Device::submit_and_wait(VkCommandBuffer commands) {
  const Instance& vk = *instance_;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  check(vk.vkResetFences(device_, 1, &fence_), "vkResetFences");
  check(vk.vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
  check(vk.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  ++queue_waits_;
}

}  // namespace scriptorium::vk
