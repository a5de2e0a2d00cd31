// NativeModel / NativeSequence: the CPU backend's model for JavaScript, with the same methods as the
// GPU's NativeGpuModel (vulkan/gpu_model.h) so the TypeScript engine drives both through one interface.
#pragma once
#include <napi.h>

namespace scriptorium {

// Adds loadModel(dir, dims, threads, visionDims?, options): Promise<NativeModel> (the load runs off
// the event loop), NativeModel, NativeSequence and supportedKernelSets() to exports. Keeps the
// model and sequence constructors as the environment's instance data.
void register_cpu_model(Napi::Env env, Napi::Object exports);

}  // namespace scriptorium
