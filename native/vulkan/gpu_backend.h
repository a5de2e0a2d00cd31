// The GPU backend's face in the addon: registered on the exports whether or not this build has the
// Vulkan backend (vulkan_backend.cc when it does, no_vulkan_backend.cc when detect.sh found
// something missing), so JavaScript always gets an answer saying what is there and why not.
#pragma once
#include <napi.h>

namespace scriptorium {

// Adds gpuDevices(): Promise<{available: boolean, reason?: string, devices: GpuDeviceInfo[]}>, and with
// the Vulkan backend loadGpuModel and NativeGpuSequence (gpu_model.h).
void register_gpu_backend(Napi::Env env, Napi::Object exports);

}  // namespace scriptorium
