// NativeGpuModel / NativeGpuSequence: the GPU backend's model for JavaScript, with the same methods
// as the CPU NativeModel (createSequence, forward, encodeImages for V1 / V3, weightBytes) so the
// TypeScript engine drives both through one interface.
#pragma once
#include <napi.h>

namespace scriptorium {

// Adds loadGpuModel(dir, dims, deviceIndex, visionDims?): Promise<NativeGpuModel> (the weight upload
// runs off the event loop) and NativeGpuSequence to exports.
void register_gpu_model(Napi::Env env, Napi::Object exports);

}  // namespace scriptorium
