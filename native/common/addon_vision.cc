#include "common/addon_vision.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace scriptorium {

namespace {

// A reader of one object of the visionDims argument, for vision_dims_from: a missing or mistyped
// field is a TypeError naming it.
class NapiVisionReader {
 public:
  explicit NapiVisionReader(Napi::Object object) : object_(object) {}

  int64_t integer(const char* key) const { return number(key).Int64Value(); }
  float real(const char* key) const { return number(key).FloatValue(); }
  std::string text(const char* key) const {
    Napi::Value v = object_.Get(key);
    if (!v.IsString()) fail(std::string(key) + " must be a string");
    return v.As<Napi::String>();
  }
  NapiVisionReader object(const char* key) const {
    Napi::Value v = object_.Get(key);
    if (!v.IsObject()) fail(std::string(key) + " must be an object");
    return NapiVisionReader(v.As<Napi::Object>());
  }
  std::vector<int64_t> integers(const char* key) const {
    Napi::Value v = object_.Get(key);
    if (!v.IsArray()) fail(std::string(key) + " must be an array");
    Napi::Array list = v.As<Napi::Array>();
    std::vector<int64_t> out;
    for (uint32_t i = 0; i < list.Length(); ++i) {
      Napi::Value item = list.Get(i);
      if (!item.IsNumber()) fail(std::string(key) + " must hold numbers");
      out.push_back(item.As<Napi::Number>().Int64Value());
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& message) const { throw Napi::TypeError::New(object_.Env(), "visionDims." + message); }

 private:
  Napi::Number number(const char* key) const {
    Napi::Value v = object_.Get(key);
    if (!v.IsNumber()) fail(std::string(key) + " must be a number");
    return v.As<Napi::Number>();
  }

  Napi::Object object_;
};

class EncodeWorker : public Napi::AsyncWorker {
 public:
  EncodeWorker(Napi::Env env, EncodeImagesFn encode, Napi::Float32Array pixels, int64_t n, int64_t side, bool keep_intermediates)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        encode_(std::move(encode)),
        pixels_ref_(Napi::Reference<Napi::Float32Array>::New(pixels, 1)),
        pixels_(pixels.Data()),
        n_(n),
        side_(side),
        keep_(keep_intermediates) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      output_ = encode_(pixels_, n_, side_, keep_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("projected", to_float32_array(env, output_.projected));
    result.Set("tokensPerView", Napi::Number::New(env, static_cast<double>(output_.tokens_per_view)));
    Napi::Object stages = Napi::Object::New(env);
    stages.Set("sam", Napi::Number::New(env, output_.stage_ms.sam));
    stages.Set("encoder", Napi::Number::New(env, output_.stage_ms.encoder));
    stages.Set("projector", Napi::Number::New(env, output_.stage_ms.projector));
    result.Set("stageMs", stages);
    if (keep_) {
      result.Set("sam", to_float32_array(env, output_.sam));
      Napi::Array shape = Napi::Array::New(env, output_.sam_shape.size());
      for (uint32_t i = 0; i < output_.sam_shape.size(); ++i)
        shape.Set(i, Napi::Number::New(env, static_cast<double>(output_.sam_shape[i])));
      result.Set("samShape", shape);
      result.Set("encoder", to_float32_array(env, output_.encoder));
    }
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  EncodeImagesFn encode_;
  // [n, 3, side, side]: read in place (a copy would cost the event loop tens of milliseconds); the
  // reference keeps the array alive, and the caller leaves it unchanged until the promise settles.
  Napi::Reference<Napi::Float32Array> pixels_ref_;
  const float* pixels_;
  int64_t n_, side_;
  bool keep_;
  VisionOutput output_;
};

}  // namespace

VisionDims read_vision_dims(const Napi::Object& o) { return vision_dims_from(NapiVisionReader(o)); }

Napi::Float32Array to_float32_array(Napi::Env env, const std::vector<float>& values) {
  Napi::Float32Array out = Napi::Float32Array::New(env, values.size());
  std::memcpy(out.Data(), values.data(), values.size() * sizeof(float));
  return out;
}

Napi::Value queue_encode_images(const Napi::CallbackInfo& info, EncodeImagesFn encode) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array || !info[1].IsNumber() ||
      !info[2].IsNumber() || !info[3].IsBoolean())
    throw Napi::TypeError::New(env, "encodeImages(pixels: Float32Array, n: number, side: number, keepIntermediates: boolean)");
  const double n = info[1].As<Napi::Number>().DoubleValue(), side = info[2].As<Napi::Number>().DoubleValue();
  if (n < 1 || n != std::floor(n) || n > 4096)
    throw Napi::RangeError::New(env, "encodeImages: n must be an integer between 1 and 4096");
  if (side < 1 || side != std::floor(side) || side > kMaxViewSide)
    throw Napi::RangeError::New(env, "encodeImages: side must be an integer between 1 and " +
                                         std::to_string(kMaxViewSide));
  Napi::Float32Array pixels = info[0].As<Napi::Float32Array>();
  const int64_t views = static_cast<int64_t>(n), s = static_cast<int64_t>(side);
  if (static_cast<int64_t>(pixels.ElementLength()) != views * 3 * s * s)
    throw Napi::RangeError::New(env, "encodeImages: pixels must hold n * 3 * side * side = " +
                                         std::to_string(views * 3 * s * s) + " floats, got " +
                                         std::to_string(pixels.ElementLength()));
  auto* worker = new EncodeWorker(env, std::move(encode), pixels, views, s, info[3].As<Napi::Boolean>().Value());
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}


}  // namespace scriptorium
