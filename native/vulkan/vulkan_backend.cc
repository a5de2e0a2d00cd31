// gpuDevices() on builds with the Vulkan backend: opens the loader and lists the devices on a libuv
// worker thread (driver start-up can take a while), never on the event loop.
#include <memory>
#include <string>
#include <vector>

#include "vulkan/device.h"
#include "vulkan/gpu_backend.h"
#include "vulkan/gpu_model.h"

namespace scriptorium {

namespace {

class ListDevicesWorker : public Napi::AsyncWorker {
 public:
  explicit ListDevicesWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      vk::Instance instance;
      devices_ = vk::list_devices(instance);
      if (devices_.empty()) reason_ = "the Vulkan loader found no device (install a Vulkan driver: mesa-vulkan-drivers, the NVIDIA driver)";
    } catch (const std::exception& e) {
      reason_ = e.what();
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("available", reason_.empty());
    if (!reason_.empty()) result.Set("reason", reason_);
    Napi::Array list = Napi::Array::New(env, devices_.size());
    for (uint32_t i = 0; i < devices_.size(); ++i) {
      const vk::DeviceInfo& d = devices_[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", d.index);
      o.Set("name", d.name);
      o.Set("type", d.type);
      o.Set("apiVersion", d.api_version);
      o.Set("memoryBytes", static_cast<double>(d.device_local_bytes));
      o.Set("memoryBudgetBytes", static_cast<double>(d.memory_budget_bytes));
      o.Set("subgroupSize", d.subgroup_size);
      o.Set("sharedMemoryBytes", d.max_shared_bytes);
      o.Set("bindingLimitBytes", static_cast<double>(d.max_binding_bytes));
      o.Set("computeQueue", d.has_compute_queue);
      Napi::Array paths = Napi::Array::New(env, d.shader_paths.size());
      for (uint32_t j = 0; j < d.shader_paths.size(); ++j) paths.Set(j, d.shader_paths[j]);
      o.Set("shaderPaths", paths);
      o.Set("matmulPath", d.matmul_path);
      Napi::Array coop = Napi::Array::New(env, d.cooperative_matrix_extensions.size());
      for (uint32_t j = 0; j < d.cooperative_matrix_extensions.size(); ++j) coop.Set(j, d.cooperative_matrix_extensions[j]);
      o.Set("cooperativeMatrixExtensions", coop);
      list.Set(i, o);
    }
    result.Set("devices", list);
    deferred_.Resolve(result);
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<vk::DeviceInfo> devices_;
  std::string reason_;
};

Napi::Value gpu_devices(const Napi::CallbackInfo& info) {
  auto* worker = new ListDevicesWorker(info.Env());
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace

void register_gpu_backend(Napi::Env env, Napi::Object exports) {
  exports.Set("gpuDevices", Napi::Function::New(env, gpu_devices, "gpuDevices"));
  register_gpu_model(env, exports);
}

}  // namespace scriptorium
