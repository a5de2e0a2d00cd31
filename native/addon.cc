// The addon's module entry: the CPU model (cpu/cpu_model.h), readSafetensorsHeader over the shared
// safetensors reader, and the GPU backend (vulkan/gpu_backend.h: the Vulkan model, or gpuDevices()
// saying why this build has none).
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <exception>

#include "common/safetensors.h"
#include "cpu/cpu_model.h"
#include "vulkan/gpu_backend.h"

namespace scriptorium {
namespace {

// readSafetensorsHeader(json: Uint8Array, dataBytes: number, file: string)
//   -> {tensors: {name, dtype, shape: number[], begin, end}[], metadata: {[key]: string}}
// The header of a safetensors file whose data section holds dataBytes bytes, validated exactly as
// loading validates it; throws an Error naming `file` and the problem.
Napi::Value ReadSafetensorsHeader(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      !info[1].IsNumber() || !info[2].IsString())
    throw Napi::TypeError::New(env, "readSafetensorsHeader(json: Uint8Array, dataBytes: number, file: string)");
  const double data_bytes = info[1].As<Napi::Number>().DoubleValue();
  if (!(data_bytes >= 0) || data_bytes > 9007199254740991.0 || data_bytes != std::floor(data_bytes))
    throw Napi::RangeError::New(env, "readSafetensorsHeader: dataBytes must be a non-negative integer");
  Napi::Uint8Array json = info[0].As<Napi::Uint8Array>();
  SafetensorsHeader header;
  try {
    header = parse_safetensors_header(reinterpret_cast<const char*>(json.Data()), json.ElementLength(),
                                      static_cast<uint64_t>(data_bytes), info[2].As<Napi::String>());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  Napi::Array tensors = Napi::Array::New(env, header.tensors.size());
  for (uint32_t i = 0; i < header.tensors.size(); ++i) {
    const TensorView& t = header.tensors[i];
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("name", t.name);
    entry.Set("dtype", dtype_name(t.dtype));
    Napi::Array shape = Napi::Array::New(env, t.shape.size());
    for (uint32_t d = 0; d < t.shape.size(); ++d) shape.Set(d, Napi::Number::New(env, static_cast<double>(t.shape[d])));
    entry.Set("shape", shape);
    entry.Set("begin", Napi::Number::New(env, static_cast<double>(t.offset)));
    entry.Set("end", Napi::Number::New(env, static_cast<double>(t.offset + t.nbytes)));
    tensors.Set(i, entry);
  }
  Napi::Object metadata = Napi::Object::New(env);
  for (const auto& [key, value] : header.metadata) metadata.Set(key, value);
  Napi::Object out = Napi::Object::New(env);
  out.Set("tensors", tensors);
  out.Set("metadata", metadata);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  register_cpu_model(env, exports);
  exports.DefineProperty(Napi::PropertyDescriptor::Value(
      "readSafetensorsHeader", Napi::Function::New(env, ReadSafetensorsHeader), napi_enumerable));
  register_gpu_backend(env, exports);
  return exports;
}

}  // namespace
}  // namespace scriptorium

using scriptorium::Init;
NODE_API_MODULE(NODE_GYP_MODULE_NAME, Init)
