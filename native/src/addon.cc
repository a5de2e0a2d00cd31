// N-API face of the engine. A NativeModel owns the mapped checkpoint, the decoder, the vision
// encoder (when vision dims are given) and its thread pool; NativeSequence objects own KV caches.
// loadModel(), forward() and encodeImages() run on a libuv worker thread (which then fans out to the engine's
// own pool) and resolve a Promise, so the event loop never waits on inference. Calls on one model
// are serialised by a mutex.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "decoder.h"
#include "addon_forward_input.h"
#include "addon_vision.h"
#include "gpu_backend.h"
#include "kernels.h"
#include "safetensors.h"
#include "thread_pool.h"
#include "vision_encoder.h"

namespace scriptorium {
namespace {

struct Engine {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<VisionEncoder> vision;  // absent for decoder-only checkpoints
  std::mutex mutex;
};

int64_t read_int(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(obj.Env(), std::string("dims.") + key + " must be a number");
  return v.As<Napi::Number>().Int64Value();
}

float read_float(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(obj.Env(), std::string("dims.") + key + " must be a number");
  return v.As<Napi::Number>().FloatValue();
}

DecoderDims read_dims(const Napi::Object& o) {
  DecoderDims d;
  d.hidden = read_int(o, "hidden");
  d.layers = read_int(o, "layers");
  d.heads = read_int(o, "heads");
  d.kv_heads = read_int(o, "kvHeads");
  d.head_dim = read_int(o, "headDim");
  d.intermediate = read_int(o, "intermediate");
  d.moe_intermediate = read_int(o, "moeIntermediate");
  d.n_routed = read_int(o, "routedExperts");
  d.top_k = read_int(o, "expertsPerToken");
  d.n_shared = read_int(o, "sharedExperts");
  d.first_k_dense = read_int(o, "firstDenseLayers");
  d.moe_layer_freq = read_int(o, "moeLayerFreq");
  d.vocab = read_int(o, "vocab");
  d.max_positions = read_int(o, "maxPositions");
  d.rms_eps = read_float(o, "rmsEps");
  d.rope_theta = read_float(o, "ropeTheta");
  d.routed_scaling = read_float(o, "routedScaling");
  d.norm_topk = o.Get("normTopk").ToBoolean().Value();
  d.sliding_window = read_int(o, "slidingWindow");
  return d;
}

class SequenceWrap : public Napi::ObjectWrap<SequenceWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeSequence",
                       {InstanceAccessor<&SequenceWrap::Length>("length"),
                        InstanceAccessor<&SequenceWrap::PrefixLength>("prefixLength"),
                        InstanceAccessor<&SequenceWrap::CacheBytes>("cacheBytes"),
                        InstanceMethod<&SequenceWrap::Release>("release")});
  }
  explicit SequenceWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SequenceWrap>(info) {}

  std::shared_ptr<Engine> engine;
  std::shared_ptr<KvCache> cache;

 private:
  Napi::Value Length(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), cache ? static_cast<double>(cache->length()) : 0);
  }
  Napi::Value PrefixLength(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), cache ? static_cast<double>(cache->prefix_length()) : -1);
  }
  Napi::Value CacheBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), cache ? static_cast<double>(cache->bytes()) : 0);
  }
  // Frees the KV cache now rather than at garbage collection; the sequence is unusable afterwards.
  Napi::Value Release(const Napi::CallbackInfo& info) {
    cache.reset();
    return info.Env().Undefined();
  }
};

class ForwardWorker : public Napi::AsyncWorker {
 public:
  ForwardWorker(Napi::Env env, std::shared_ptr<Engine> engine, std::vector<ForwardEntry> entries,
                std::vector<std::shared_ptr<KvCache>> caches)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        engine_(std::move(engine)),
        entries_(std::move(entries)),
        caches_(std::move(caches)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    std::lock_guard<std::mutex> lock(engine_->mutex);
    try {
      size_t rows = 0;
      for (const ForwardEntry& entry : entries_) rows += entry.want_logits ? 1 : 0;
      logits_.resize(rows * engine_->decoder->dims().vocab);
      best_.resize(entries_.size());
      engine_->decoder->forward(entries_, logits_.data(), best_.data());
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Float32Array logits = Napi::Float32Array::New(Env(), logits_.size());
    std::memcpy(logits.Data(), logits_.data(), logits_.size() * sizeof(float));
    Napi::Int32Array best = Napi::Int32Array::New(Env(), best_.size());
    std::memcpy(best.Data(), best_.data(), best_.size() * sizeof(int32_t));
    Napi::Object out = Napi::Object::New(Env());
    out.Set("logits", logits);
    out.Set("best", best);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<Engine> engine_;
  std::vector<ForwardEntry> entries_;
  std::vector<std::shared_ptr<KvCache>> caches_;  // keep the caches alive while the worker runs
  std::vector<float> logits_;
  std::vector<int32_t> best_;
};

class ModelWrap : public Napi::ObjectWrap<ModelWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeModel",
                       {InstanceMethod<&ModelWrap::CreateSequence>("createSequence"),
                        InstanceMethod<&ModelWrap::Forward>("forward"),
                        InstanceMethod<&ModelWrap::EncodeImages>("encodeImages"),
                        InstanceMethod<&ModelWrap::SpecialVector>("specialVector"),
                        InstanceAccessor<&ModelWrap::Kernels>("kernels"),
                        InstanceAccessor<&ModelWrap::Threads>("threads"),
                        InstanceAccessor<&ModelWrap::WeightBytes>("weightBytes"),
                        InstanceAccessor<&ModelWrap::ConvertedBytes>("convertedBytes"),
                        InstanceAccessor<&ModelWrap::UnreadTensors>("unreadTensors")});
  }

  // Made only by loadModel(), which hands over the engine it built off the event loop.
  explicit ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
    if (info.Length() < 1 || !info[0].IsExternal())
      throw Napi::TypeError::New(info.Env(), "NativeModel objects come from loadModel()");
    engine_ = *info[0].As<Napi::External<std::shared_ptr<Engine>>>().Data();
  }

 private:
  Napi::Value CreateSequence(const Napi::CallbackInfo& info);
  Napi::Value Forward(const Napi::CallbackInfo& info);
  Napi::Value EncodeImages(const Napi::CallbackInfo& info);
  Napi::Value SpecialVector(const Napi::CallbackInfo& info);
  Napi::Value Kernels(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), active_kernels().name); }
  Napi::Value Threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), engine_->pool->size()); }
  Napi::Value WeightBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->checkpoint->total_bytes()));
  }

  // Bytes of the BF16 copies of F16 / F32 weights, on top of the mapped files.
  Napi::Value ConvertedBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->checkpoint->converted_bytes()));
  }
  // Tensors of the checkpoint the model does not read (extra buffers such as position_ids), sorted.
  Napi::Value UnreadTensors(const Napi::CallbackInfo& info) {
    const std::vector<std::string> names = engine_->checkpoint->unread_tensors();
    Napi::Array out = Napi::Array::New(info.Env(), names.size());
    for (uint32_t i = 0; i < names.size(); ++i) out.Set(i, Napi::String::New(info.Env(), names[i]));
    return out;
  }

  std::shared_ptr<Engine> engine_;
};

// Maps the checkpoint and builds the decoder (and vision encoder) on a libuv worker thread: loading
// converts F16 / F32 weights, seconds of work for a full checkpoint that the event loop never waits on.
class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, std::string dir, DecoderDims dims, int threads, bool with_vision, VisionDims vision_dims)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        dir_(std::move(dir)),
        dims_(dims),
        threads_(threads),
        with_vision_(with_vision),
        vision_dims_(std::move(vision_dims)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      engine_ = std::make_shared<Engine>();
      engine_->pool = std::make_unique<ThreadPool>(threads_);
      engine_->checkpoint = std::make_unique<Checkpoint>(dir_);
      engine_->decoder = std::make_unique<Decoder>(*engine_->checkpoint, dims_, *engine_->pool);
      if (with_vision_) {
        if (vision_dims_.embed != dims_.hidden) throw std::invalid_argument("config.json: projector n_embed must equal hidden_size");
        engine_->vision = std::make_unique<VisionEncoder>(*engine_->checkpoint, vision_dims_, *engine_->pool);
      }
    } catch (const std::exception& e) {
      engine_.reset();
      SetError(e.what());
    }
  }

  void OnOK() override;
  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::string dir_;
  DecoderDims dims_;
  int threads_;
  bool with_vision_;
  VisionDims vision_dims_;
  std::shared_ptr<Engine> engine_;
};

// loadModel(dir: string, dims: DecoderDims, threads: number, visionDims?: VisionDims) -> Promise<NativeModel>
Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsObject() || !info[2].IsNumber() ||
      (info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsObject()))
    throw Napi::TypeError::New(env, "loadModel(dir: string, dims: object, threads: number, visionDims?: object)");
  const DecoderDims dims = read_dims(info[1].As<Napi::Object>());
  const bool with_vision = info.Length() > 3 && info[3].IsObject();
  VisionDims vision_dims;
  if (with_vision) vision_dims = read_vision_dims(info[3].As<Napi::Object>());
  const int threads = info[2].As<Napi::Number>().Int32Value();
  if (threads < 1 || threads > 1024) throw Napi::RangeError::New(env, "threads must be between 1 and 1024");
  auto* worker = new LoadWorker(env, info[0].As<Napi::String>(), dims, threads, with_vision, std::move(vision_dims));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

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

class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports) {
    Napi::Function sequence = SequenceWrap::Init(env);
    sequence_constructor = Napi::Persistent(sequence);
    Napi::Function model = ModelWrap::Init(env);
    model_constructor = Napi::Persistent(model);
    DefineAddon(exports, {InstanceValue("NativeModel", model, napi_enumerable),
                          InstanceValue("loadModel", Napi::Function::New(env, LoadModel), napi_enumerable),
                          InstanceValue("NativeSequence", sequence, napi_enumerable),
                          InstanceMethod<&Addon::KernelSets>("supportedKernelSets", napi_enumerable),
                          InstanceValue("readSafetensorsHeader", Napi::Function::New(env, ReadSafetensorsHeader), napi_enumerable)});
    register_gpu_backend(env, exports);
  }
  Napi::FunctionReference sequence_constructor;
  Napi::FunctionReference model_constructor;

 private:
  // Names of the kernel sets this CPU can run, best first.
  Napi::Value KernelSets(const Napi::CallbackInfo& info) {
    Napi::Array out = Napi::Array::New(info.Env());
    uint32_t i = 0;
    for (const char* name : {"avx512bf16", "avx512", "avx2", "scalar"})
      if (kernels_by_name(name)) out.Set(i++, Napi::String::New(info.Env(), name));
    return out;
  }
};

void LoadWorker::OnOK() {
  Napi::Env env = Env();
  auto holder = Napi::External<std::shared_ptr<Engine>>::New(
      env, new std::shared_ptr<Engine>(std::move(engine_)), [](Napi::Env, std::shared_ptr<Engine>* engine) { delete engine; });
  deferred_.Resolve(env.GetInstanceData<Addon>()->model_constructor.New({holder}));
}

Napi::Value ModelWrap::CreateSequence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object object = env.GetInstanceData<Addon>()->sequence_constructor.New({});
  SequenceWrap* sequence = SequenceWrap::Unwrap(object);
  sequence->engine = engine_;
  sequence->cache = std::make_shared<KvCache>(engine_->decoder->dims());
  return object;
}

// forward(batch: {sequence, ids: Int32Array, embeds?: Float32Array, embedRows?: Int32Array,
//                 logits?: boolean (default true), banned?: Int32Array}[])
//   -> Promise<{best: Int32Array [batch.length], logits: Float32Array [entries with logits, vocab]}>
//   best: each sequence's argmax over the ids not banned; logits of its last new token when asked
Napi::Value ModelWrap::Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "forward(batch: array)");
  Napi::Array batch = info[0].As<Napi::Array>();
  Napi::Function sequence_class = env.GetInstanceData<Addon>()->sequence_constructor.Value();
  std::vector<ForwardEntry> entries(batch.Length());
  std::vector<std::shared_ptr<KvCache>> caches;
  for (uint32_t i = 0; i < batch.Length(); ++i) {
    Napi::Value item_value = batch.Get(i);
    if (!item_value.IsObject()) throw Napi::TypeError::New(env, "forward: batch entries must be objects");
    Napi::Object item = item_value.As<Napi::Object>();
    Napi::Value seq_value = item.Get("sequence");
    if (!seq_value.IsObject() || !seq_value.As<Napi::Object>().InstanceOf(sequence_class))
      throw Napi::TypeError::New(env, "forward: entry.sequence must come from createSequence()");
    SequenceWrap* sequence = SequenceWrap::Unwrap(seq_value.As<Napi::Object>());
    if (!sequence->cache) throw Napi::Error::New(env, "forward: the sequence was released");
    if (sequence->engine != engine_) throw Napi::Error::New(env, "forward: the sequence belongs to another model");
    read_forward_input(item, entries[i]);
    entries[i].cache = sequence->cache.get();
    caches.push_back(sequence->cache);
  }
  auto* worker = new ForwardWorker(env, engine_, std::move(entries), std::move(caches));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

// encodeImages(pixels, n, side, keepIntermediates): see addon_vision.h.
Napi::Value ModelWrap::EncodeImages(const Napi::CallbackInfo& info) {
  if (!engine_->vision) throw Napi::Error::New(info.Env(), "encodeImages: this model was loaded without vision dims");
  std::shared_ptr<Engine> engine = engine_;
  return queue_encode_images(info, [engine](const float* pixels, int64_t n, int64_t side, bool keep) {
    std::lock_guard<std::mutex> lock(engine->mutex);
    return engine->vision->encode(pixels, n, side, keep);
  });
}

// specialVector(name: 'image_newline' | 'view_seperator') -> Float32Array [embed]
Napi::Value ModelWrap::SpecialVector(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_->vision) throw Napi::Error::New(env, "specialVector: this model was loaded without vision dims");
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "specialVector(name: string)");
  const std::string name = info[0].As<Napi::String>();
  if (name == "view_seperator") return to_float32_array(env, engine_->vision->view_separator());
  if (name != "image_newline")
    throw Napi::Error::New(env, "specialVector: unknown vector '" + name + "' (image_newline or view_seperator)");
  if (engine_->vision->image_newline().empty())
    throw Napi::Error::New(env, "specialVector: this checkpoint has no image_newline (DeepSeek-OCR-2 does not use one)");
  return to_float32_array(env, engine_->vision->image_newline());
}

}  // namespace
}  // namespace scriptorium

using ScriptoriumAddon = scriptorium::Addon;
NODE_API_ADDON(ScriptoriumAddon)
