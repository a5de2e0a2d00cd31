// The vision side of the N-API face, shared by the CPU model (cpu/cpu_model.cc) and the GPU model
// (vulkan/gpu_model.cc): reading VisionDims from JavaScript and encodeImages() with its argument
// checks, worker thread and result object.
#pragma once
#include <napi.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "common/vision_dims.h"
#include "common/vision_output.h"

namespace scriptorium {

// The VisionDims object of src/engine/vision-config.ts; throws a TypeError naming a wrong field.
VisionDims read_vision_dims(const Napi::Object& o);

Napi::Float32Array to_float32_array(Napi::Env env, const std::vector<float>& values);

// Runs one encode on a libuv worker thread (the function serialises with its engine's other calls).
using EncodeImagesFn = std::function<VisionOutput(const float* pixels, int64_t n, int64_t side, bool keep_intermediates)>;

// encodeImages(pixels: Float32Array [n, 3, side, side], n: number, side: number, keepIntermediates: boolean)
//   -> Promise<{projected: Float32Array [n, tokensPerView, embed], tokensPerView: number, stageMs,
//               sam?: Float32Array [n, C, h, w], samShape?: number[], encoder?: Float32Array [n, tokensPerView, width]}>
// Checks the arguments, then queues `encode` on a worker thread; the pixels are read in place.
Napi::Value queue_encode_images(const Napi::CallbackInfo& info, EncodeImagesFn encode);

}  // namespace scriptorium
