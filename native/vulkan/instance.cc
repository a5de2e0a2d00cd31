#include "vulkan/instance.h"

#include <dlfcn.h>

namespace scriptorium::vk {

namespace {

const char* result_name(VkResult result) {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver installed)";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "a Vulkan error";
  }
}

}  // namespace

void check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw VulkanError(std::string(what) + " failed: " + result_name(result) + " (" + std::to_string(result) + ")");
}

Instance::Instance() {
  library_ = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_)
    throw VulkanError("the Vulkan loader libvulkan.so.1 is not installed (Debian: libvulkan1, plus a driver such as "
                      "mesa-vulkan-drivers or the NVIDIA driver)");
  auto get_instance_proc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library_, "vkGetInstanceProcAddr"));
  auto create_instance = get_instance_proc
                             ? reinterpret_cast<PFN_vkCreateInstance>(get_instance_proc(VK_NULL_HANDLE, "vkCreateInstance"))
                             : nullptr;
  if (!create_instance) {
    dlclose(library_);
    throw VulkanError("libvulkan.so.1 does not export vkGetInstanceProcAddr");
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "scriptorium";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  const VkResult result = create_instance(&info, nullptr, &instance_);
  if (result != VK_SUCCESS) {
    dlclose(library_);
    check(result, "vkCreateInstance");
  }
#define SCRIPTORIUM_VK_LOAD(name)                                                              \
  name = reinterpret_cast<PFN_##name>(get_instance_proc(instance_, #name));                    \
  if (!name) {                                                                                 \
    auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(get_instance_proc(instance_, "vkDestroyInstance")); \
    if (destroy) destroy(instance_, nullptr);                                                  \
    dlclose(library_);                                                                         \
    throw VulkanError("the Vulkan loader lacks " #name " (Vulkan 1.1 is required)");           \
  }
  SCRIPTORIUM_VK_FUNCTIONS(SCRIPTORIUM_VK_LOAD)
#undef SCRIPTORIUM_VK_LOAD
  vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      get_instance_proc(instance_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
}

Instance::~Instance() {
  vkDestroyInstance(instance_, nullptr);
  dlclose(library_);
}

}  // namespace scriptorium::vk
