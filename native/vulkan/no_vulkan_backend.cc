// Built instead of vulkan_backend.cc when the build machine lacked the Vulkan headers or glslc.
#include "vulkan/gpu_backend.h"

namespace scriptorium {

namespace {

Napi::Value gpu_devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("available", false);
  result.Set("reason", "this build of the addon has no Vulkan backend: it was built without " SCRIPTORIUM_VULKAN_MISSING
                       " (Debian packages); install them and run `npm run build:native`");
  result.Set("devices", Napi::Array::New(env));
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Resolve(result);
  return deferred.Promise();
}

}  // namespace

void register_gpu_backend(Napi::Env env, Napi::Object exports) {
  exports.Set("gpuDevices", Napi::Function::New(env, gpu_devices, "gpuDevices"));
}

}  // namespace scriptorium
