#include "common/addon_vision.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace scriptorium {

namespace {

int64_t vision_int(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(obj.Env(), std::string("visionDims.") + key + " must be a number");
  return v.As<Napi::Number>().Int64Value();
}

float vision_float(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(obj.Env(), std::string("visionDims.") + key + " must be a number");
  return v.As<Napi::Number>().FloatValue();
}

Napi::Object read_object(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsObject()) throw Napi::TypeError::New(obj.Env(), std::string("visionDims.") + key + " must be an object");
  return v.As<Napi::Object>();
}

std::vector<int64_t> read_int_list(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsArray()) throw Napi::TypeError::New(obj.Env(), std::string("visionDims.") + key + " must be an array");
  Napi::Array list = v.As<Napi::Array>();
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value item = list.Get(i);
    if (!item.IsNumber()) throw Napi::TypeError::New(obj.Env(), std::string("visionDims.") + key + " must hold numbers");
    out.push_back(item.As<Napi::Number>().Int64Value());
  }
  return out;
}

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

VisionDims read_vision_dims(const Napi::Object& o) {
  VisionDims d;
  const std::string kind = o.Get("kind").ToString();
  if (kind != "deepencoder" && kind != "deepencoderv2")
    throw Napi::TypeError::New(o.Env(), "visionDims.kind must be 'deepencoder' or 'deepencoderv2'");
  d.kind = kind == "deepencoder" ? VisionKind::DeepEncoder : VisionKind::DeepEncoderV2;
  const Napi::Object s = read_object(o, "sam");
  d.sam.width = vision_int(s, "width");
  d.sam.layers = vision_int(s, "layers");
  d.sam.heads = vision_int(s, "heads");
  d.sam.patch = vision_int(s, "patchSize");
  d.sam.window = vision_int(s, "windowSize");
  d.sam.mlp = vision_int(s, "mlpDim");
  d.sam.pos_grid = vision_int(s, "posGrid");
  d.sam.global_blocks = read_int_list(s, "globalBlocks");
  d.sam.neck = vision_int(s, "neckChannels");
  d.sam.net2 = vision_int(s, "net2Channels");
  d.sam.net3 = vision_int(s, "net3Channels");
  d.sam.eps = vision_float(s, "normEps");
  if (d.kind == VisionKind::DeepEncoder) {
    const Napi::Object c = read_object(o, "clip");
    d.clip.width = vision_int(c, "width");
    d.clip.layers = vision_int(c, "layers");
    d.clip.heads = vision_int(c, "heads");
    d.clip.mlp = vision_int(c, "mlpDim");
    d.clip.pos_grid = vision_int(c, "posGrid");
    d.clip.eps = vision_float(c, "normEps");
  } else {
    const Napi::Object q = read_object(o, "qwen2");
    d.qwen2.dim = vision_int(q, "dim");
    d.qwen2.layers = vision_int(q, "layers");
    d.qwen2.heads = vision_int(q, "heads");
    d.qwen2.kv_heads = vision_int(q, "kvHeads");
    d.qwen2.mlp = vision_int(q, "mlpDim");
    d.qwen2.rms_eps = vision_float(q, "rmsEps");
    d.qwen2.rope_theta = vision_float(q, "ropeTheta");
    d.qwen2.query_sides = read_int_list(q, "querySides");
  }
  d.projector_input = vision_int(o, "projectorInput");
  d.embed = vision_int(o, "embed");
  return d;
}

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
