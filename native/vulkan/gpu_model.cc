#include "vulkan/gpu_model.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/addon_forward.h"
#include "common/addon_vision.h"
#include "vulkan/gpu_decoder.h"
#include "vulkan/gpu_vision_encoder.h"

namespace scriptorium {

namespace {

struct GpuEngine {
  std::shared_ptr<vk::Instance> instance;
  std::unique_ptr<vk::Device> device;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<vk::GpuDecoder> decoder;
  std::unique_ptr<vk::GpuVisionEncoder> vision;  // null for decoder-only checkpoints
  std::mutex mutex;

  ~GpuEngine() {
    decoder.reset();  // device objects go before the device
    vision.reset();
  }
};

// Per-environment classes: the model constructor loadGpuModel resolves with, the sequence one the
// model creates sequences with.
struct GpuClasses {
  Napi::FunctionReference model, sequence;
};

using GpuSequenceWrap = SequenceWrapOf<GpuEngine, vk::GpuKvCache>;

class GpuModelWrap : public Napi::ObjectWrap<GpuModelWrap> {
 public:
  static Napi::Function Init(Napi::Env env, GpuClasses* classes) {
    return DefineClass(env, "NativeGpuModel",
                       {InstanceMethod<&GpuModelWrap::CreateSequence>("createSequence"),
                        InstanceMethod<&GpuModelWrap::Forward>("forward"),
                        InstanceMethod<&GpuModelWrap::EncodeImages>("encodeImages"),
                        InstanceAccessor<&GpuModelWrap::VisionOnDevice>("visionOnDevice"),
                        InstanceAccessor<&GpuModelWrap::DeviceName>("deviceName"),
                        InstanceAccessor<&GpuModelWrap::WeightBytes>("weightBytes"),
                        InstanceAccessor<&GpuModelWrap::Memory>("memory"),
                        InstanceAccessor<&GpuModelWrap::QueueWaits>("queueWaits")},
                       classes);
  }

  // Made only by loadGpuModel, which passes the loaded engine as an External.
  explicit GpuModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GpuModelWrap>(info) {
    classes_ = static_cast<GpuClasses*>(info.Data());
    if (info.Length() < 1 || !info[0].IsExternal())
      throw Napi::TypeError::New(info.Env(), "NativeGpuModel is made by loadGpuModel(dir, dims, deviceIndex)");
    engine_ = *info[0].As<Napi::External<std::shared_ptr<GpuEngine>>>().Data();
  }

 private:
  // createSequence(kvCache: 'f16' | 'f32'): a sequence whose cache on the device stores keys and values as kvCache.
  Napi::Value CreateSequence(const Napi::CallbackInfo& info) {
    const KvCacheDtype dtype = read_kv_cache_dtype(info);
    Napi::Object object = classes_->sequence.New({});
    GpuSequenceWrap* sequence = GpuSequenceWrap::Unwrap(object);
    sequence->engine = engine_;
    sequence->cache = std::make_shared<vk::GpuKvCache>(*engine_->device, engine_->decoder->dims(), dtype);
    return object;
  }

  // forward(batch) exactly as NativeModel.forward (see cpu/cpu_model.cc), on the device.
  Napi::Value Forward(const Napi::CallbackInfo& info) {
    std::vector<ForwardEntry> entries;
    auto caches = read_forward_batch<GpuSequenceWrap>(info, classes_->sequence.Value(), engine_, entries);
    std::shared_ptr<GpuEngine> engine = engine_;
    return queue_forward(info.Env(), engine->decoder->dims().vocab, std::move(entries),
                         [engine, caches](std::vector<ForwardEntry>& batch, float* logits, int32_t* best, float* logprob) {
                           std::lock_guard<std::mutex> lock(engine->mutex);
                           const auto start = std::chrono::steady_clock::now();
                           std::vector<vk::GpuKvCache*> raw;
                           for (const auto& cache : caches) raw.push_back(cache.get());
                           engine->decoder->forward(batch, raw, logits, best, logprob);
                           return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
                         });
  }

  // encodeImages(pixels, n, side, keepIntermediates) as NativeModel's (see addon_vision.h), on the device.
  Napi::Value EncodeImages(const Napi::CallbackInfo& info) {
    if (!engine_->vision) throw Napi::Error::New(info.Env(), "encodeImages: this model's vision encoder is not on the device");
    std::shared_ptr<GpuEngine> engine = engine_;
    return queue_encode_images(info, [engine](const float* pixels, int64_t n, int64_t side, bool keep) {
      std::lock_guard<std::mutex> lock(engine->mutex);
      return engine->vision->encode(pixels, n, side, keep);
    });
  }

  Napi::Value VisionOnDevice(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), engine_->vision != nullptr); }
  Napi::Value DeviceName(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), engine_->device->info().name); }
  Napi::Value WeightBytes(const Napi::CallbackInfo& info) {
    const uint64_t vision = engine_->vision ? engine_->vision->weight_bytes() : 0;
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->decoder->weight_bytes() + vision));
  }

  // {budgetBytes, usedBytes}: the device memory budget and what this model's buffers hold of it now.
  Napi::Value Memory(const Napi::CallbackInfo& info) {
    Napi::Object out = Napi::Object::New(info.Env());
    out.Set("budgetBytes", static_cast<double>(engine_->device->memory_budget()));
    out.Set("usedBytes", static_cast<double>(engine_->device->memory_used()));
    return out;
  }

  // Device::queue_waits: host round trips so far (a forward call should make one).
  Napi::Value QueueWaits(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->device->queue_waits()));
  }

  GpuClasses* classes_ = nullptr;
  std::shared_ptr<GpuEngine> engine_;
};

// Opens the device, maps the checkpoint and uploads the decoder's (and the vision encoder's) weights on
// a libuv worker thread.
class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, GpuClasses* classes, std::string dir, DecoderDims dims, int index,
             std::unique_ptr<VisionDims> vision_dims, Precision precision)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        classes_(classes),
        dir_(std::move(dir)),
        dims_(dims),
        index_(index),
        vision_dims_(std::move(vision_dims)),
        precision_(precision) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      auto engine = std::make_shared<GpuEngine>();
      engine->instance = std::make_shared<vk::Instance>();
      engine->device = std::make_unique<vk::Device>(engine->instance, index_);
      engine->checkpoint = std::make_unique<Checkpoint>(dir_);
      const std::string matmul_path = vk::model_matmul_path(engine->device->info(), precision_ == Precision::Fast);
      engine->decoder = std::make_unique<vk::GpuDecoder>(*engine->device, *engine->checkpoint, dims_, matmul_path, precision_);
      if (vision_dims_)
        engine->vision = std::make_unique<vk::GpuVisionEncoder>(*engine->device, *engine->checkpoint, *vision_dims_,
                                                                matmul_path, precision_);
      engine_ = std::move(engine);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    auto handle = Napi::External<std::shared_ptr<GpuEngine>>::New(env, &engine_);
    deferred_.Resolve(classes_->model.New({handle}));
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  GpuClasses* classes_;
  std::string dir_;
  DecoderDims dims_;
  int index_;
  std::unique_ptr<VisionDims> vision_dims_;  // null: decoder only
  Precision precision_;
  std::shared_ptr<GpuEngine> engine_;
};

// loadGpuModel(dir: string, dims: DecoderDims, deviceIndex: number, visionDims: VisionDims | undefined,
//              options: {precision: 'exact' | 'fast'}) -> Promise<NativeGpuModel>; vision dims put the
// vision encoder (SAM, CLIP or Qwen2, the projector) on the device too; fast precision rounds the
// products' activations (BF16 on the portable path, FP16 on the device's cooperative-matrix path where it has one).
Napi::Value load_gpu_model(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsObject() || !info[2].IsNumber() ||
      (!info[3].IsUndefined() && !info[3].IsObject()) || !info[4].IsObject())
    throw Napi::TypeError::New(env, "loadGpuModel(dir: string, dims: object, deviceIndex: number, visionDims: object | undefined, options: object)");
  const Precision precision = read_precision(info[4].As<Napi::Object>());
  auto* classes = static_cast<GpuClasses*>(info.Data());
  std::unique_ptr<VisionDims> vision;
  if (info[3].IsObject()) vision = std::make_unique<VisionDims>(read_vision_dims(info[3].As<Napi::Object>()));
  auto* worker = new LoadWorker(env, classes, info[0].As<Napi::String>(), read_decoder_dims(info[1].As<Napi::Object>()),
                                info[2].As<Napi::Number>().Int32Value(), std::move(vision), precision);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace

void register_gpu_model(Napi::Env env, Napi::Object exports) {
  auto* classes = new GpuClasses();
  env.AddCleanupHook([classes] { delete classes; });
  Napi::Function sequence = GpuSequenceWrap::Init(env, "NativeGpuSequence");
  classes->sequence = Napi::Persistent(sequence);
  classes->model = Napi::Persistent(GpuModelWrap::Init(env, classes));
  exports.Set("NativeGpuSequence", sequence);
  exports.Set("loadGpuModel", Napi::Function::New(env, load_gpu_model, "loadGpuModel", classes));
}

}  // namespace scriptorium
