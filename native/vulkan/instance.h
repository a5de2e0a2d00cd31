// The Vulkan loader opened at run time (libvulkan.so.1) and one VkInstance. The addon never links
// against libvulkan, so it loads on machines without a Vulkan driver; only the GPU backend is then
// unavailable, with an error that says why.
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

namespace scriptorium::vk {

// Entry points this backend calls, all resolved through vkGetInstanceProcAddr.
#define SCRIPTORIUM_VK_FUNCTIONS(X)                                                                 \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)               \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties) \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties)                \
  X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)      \
  X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)         \
  X(vkMapMemory) X(vkUnmapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)                   \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)           \
  X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)                        \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool)                      \
  X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateCommandPool)                       \
  X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkBeginCommandBuffer)                        \
  X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets)      \
  X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer)                  \
  X(vkCreateFence) X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences) X(vkQueueSubmit)

// Thrown for everything that keeps the GPU backend from running: no loader, no device, a failed call.
class VulkanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws VulkanError "<what> failed: VK_ERROR_..." unless result is VK_SUCCESS.
void check(VkResult result, const char* what);

class Instance {
 public:
  // Opens the loader and creates an instance (Vulkan 1.1); throws VulkanError naming what is missing.
  Instance();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }

#define SCRIPTORIUM_VK_MEMBER(name) PFN_##name name = nullptr;
  SCRIPTORIUM_VK_FUNCTIONS(SCRIPTORIUM_VK_MEMBER)
#undef SCRIPTORIUM_VK_MEMBER
  // Null unless a driver offers VK_NV_cooperative_matrix.
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = nullptr;

 private:
  void* library_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
};

}  // namespace scriptorium::vk
