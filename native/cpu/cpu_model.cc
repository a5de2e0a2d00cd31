// NativeModel / NativeSequence: the CPU backend's model for JavaScript. A NativeModel owns the mapped
// checkpoint, the decoder, the vision encoder (when vision dims are given) and its thread pool;
// NativeSequence objects own KV caches. loadModel(), forward() and encodeImages() run on a libuv
// worker thread (which then fans out to the engine's own pool) and resolve a Promise, so the event
// loop never waits on inference. Calls on one model take turns on its cores (ComputeTurns): forward
// calls whole, encodes layer by layer within the time the forward calls grant them.
#include "cpu/cpu_model.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/addon_forward.h"
#include "common/addon_vision.h"
#include "common/safetensors.h"
#include "common/thread_pool.h"
#include "cpu/attention.h"
#include "cpu/compute_turns.h"
#include "cpu/cpu_decoder.h"
#include "cpu/cpu_vision_encoder.h"
#include "cpu/kernels.h"

namespace scriptorium {
namespace {

struct Engine {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<VisionEncoder> vision;  // absent for decoder-only checkpoints
  ComputeTurns turns;
};

using SequenceWrap = SequenceWrapOf<Engine, KvCache>;

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
                        InstanceAccessor<&ModelWrap::PromptChunkTokens>("promptChunkTokens"),
                        InstanceAccessor<&ModelWrap::WeightBytes>("weightBytes"),
                        InstanceAccessor<&ModelWrap::ConvertedBytes>("convertedBytes"),
                        InstanceAccessor<&ModelWrap::QuantizedBytes>("quantizedBytes"),
                        InstanceAccessor<&ModelWrap::RoutedExpertPasses>("routedExpertPasses"),
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
  // A prompt read in calls that end at multiples of this many tokens (all but the last) gives
  // bitwise the results of one call (attend_caches).
  Napi::Value PromptChunkTokens(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kAttentionQueryBlock));
  }
  Napi::Value WeightBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->checkpoint->total_bytes()));
  }

  // Bytes of the BF16 copies of F16 / F32 weights, on top of the mapped files.
  Napi::Value ConvertedBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->checkpoint->converted_bytes()));
  }
  // Bytes of the int8 copies of experts and head (--quantize int8), in place of their mapped pages.
  Napi::Value QuantizedBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->decoder->quantized_bytes()));
  }
  // Routed experts run so far (each distinct expert a MoE layer's batch selects, once per call).
  Napi::Value RoutedExpertPasses(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(engine_->decoder->routed_expert_passes()));
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
  LoadWorker(Napi::Env env, std::string dir, DecoderDims dims, int threads, bool with_vision, VisionDims vision_dims,
             Precision precision, WeightQuantization quantization, std::string packed_weights_dir)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        dir_(std::move(dir)),
        dims_(dims),
        threads_(threads),
        with_vision_(with_vision),
        vision_dims_(std::move(vision_dims)),
        precision_(precision),
        quantization_(quantization),
        packed_weights_dir_(std::move(packed_weights_dir)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      engine_ = std::make_shared<Engine>();
      engine_->pool = std::make_unique<ThreadPool>(threads_);
      engine_->checkpoint = std::make_unique<Checkpoint>(dir_);
      engine_->decoder = std::make_unique<Decoder>(*engine_->checkpoint, dims_, *engine_->pool, precision_, quantization_,
                                                 packed_weights_dir_);
      if (with_vision_) {
        if (vision_dims_.embed != dims_.hidden) throw std::invalid_argument("config.json: projector n_embed must equal hidden_size");
        engine_->vision = std::make_unique<VisionEncoder>(*engine_->checkpoint, vision_dims_, *engine_->pool, precision_);
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
  Precision precision_;
  WeightQuantization quantization_;
  std::string packed_weights_dir_;
  std::shared_ptr<Engine> engine_;
};

// loadModel(dir: string, dims: DecoderDims, threads: number, visionDims: VisionDims | undefined,
//           options: {precision: 'exact' | 'fast', quantize?: 'none' | 'int8', packedWeightsDir?: string})
//   -> Promise<NativeModel>
Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsObject() || !info[2].IsNumber() ||
      (!info[3].IsUndefined() && !info[3].IsObject()) || !info[4].IsObject())
    throw Napi::TypeError::New(env, "loadModel(dir: string, dims: object, threads: number, visionDims: object | undefined, options: object)");
  const Napi::Object options = info[4].As<Napi::Object>();
  const Precision precision = read_precision(options);
  const Napi::Value quantize = options.Get("quantize");
  const std::string quantize_name = quantize.IsUndefined() ? "none" : quantize.IsString() ? quantize.As<Napi::String>().Utf8Value() : "";
  if (quantize_name != "none" && quantize_name != "int8")
    throw Napi::TypeError::New(env, "loadModel: options.quantize must be 'none' or 'int8'");
  const WeightQuantization quantization = quantize_name == "int8" ? WeightQuantization::Int8 : WeightQuantization::None;
  const Napi::Value packed_dir = options.Get("packedWeightsDir");
  if (!packed_dir.IsUndefined() && (!packed_dir.IsString() || packed_dir.As<Napi::String>().Utf8Value().empty()))
    throw Napi::TypeError::New(env, "loadModel: options.packedWeightsDir must be a non-empty string");
  const std::string packed_weights_dir = packed_dir.IsUndefined() ? "" : packed_dir.As<Napi::String>().Utf8Value();
  const DecoderDims dims = read_decoder_dims(info[1].As<Napi::Object>());
  const bool with_vision = info[3].IsObject();
  VisionDims vision_dims;
  if (with_vision) vision_dims = read_vision_dims(info[3].As<Napi::Object>());
  const int threads = info[2].As<Napi::Number>().Int32Value();
  if (threads < 1 || threads > 1024) throw Napi::RangeError::New(env, "threads must be between 1 and 1024");
  auto* worker =
      new LoadWorker(env, info[0].As<Napi::String>(), dims, threads, with_vision, std::move(vision_dims), precision, quantization,
                     packed_weights_dir);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

// The constructors loadModel, createSequence and forward need: the environment's instance data.
struct CpuClasses {
  Napi::FunctionReference sequence_constructor;
  Napi::FunctionReference model_constructor;
};

// supportedKernelSets() -> names of the kernel sets this CPU can run, best first.
Napi::Value SupportedKernelSets(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env());
  uint32_t i = 0;
  for (const char* name : kernel_set_names())
    if (kernels_by_name(name)) out.Set(i++, Napi::String::New(info.Env(), name));
  return out;
}

void LoadWorker::OnOK() {
  Napi::Env env = Env();
  auto holder = Napi::External<std::shared_ptr<Engine>>::New(
      env, new std::shared_ptr<Engine>(std::move(engine_)), [](Napi::Env, std::shared_ptr<Engine>* engine) { delete engine; });
  deferred_.Resolve(env.GetInstanceData<CpuClasses>()->model_constructor.New({holder}));
}

// createSequence(kvCache: 'f16' | 'f32') -> NativeSequence whose KV cache stores keys and values as kvCache
Napi::Value ModelWrap::CreateSequence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KvCacheDtype dtype = read_kv_cache_dtype(info);
  Napi::Object object = env.GetInstanceData<CpuClasses>()->sequence_constructor.New({});
  SequenceWrap* sequence = SequenceWrap::Unwrap(object);
  sequence->engine = engine_;
  sequence->cache = std::make_shared<KvCache>(engine_->decoder->dims(), dtype);
  return object;
}

// forward(batch: {sequence, ids: Int32Array, embeds?: Float32Array, embedRows?: Int32Array,
//                 logits?: boolean (default true), banned?: Int32Array}[], options?: {encodeMs?: number})
//   -> Promise<{best: Int32Array [batch.length], logprob: Float32Array [batch.length],
//               logits: Float32Array [entries with logits, vocab], computeMs: number}>
//   best: each sequence's argmax over the ids not banned; logprob: the log-softmax of its logits (all
//   ids) at best; logits of its last new token when asked; computeMs: the call's time on the cores.
//   encodeMs: the time encodes may then take before a waiting forward call goes first (default: no limit)
Napi::Value ModelWrap::Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<ForwardEntry> entries;
  auto caches = read_forward_batch<SequenceWrap>(info, env.GetInstanceData<CpuClasses>()->sequence_constructor.Value(),
                                                 engine_, entries);
  double encode_ms = std::numeric_limits<double>::infinity();
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!info[1].IsObject()) throw Napi::TypeError::New(env, "forward: options must be an object");
    const Napi::Value value = info[1].As<Napi::Object>().Get("encodeMs");
    if (!value.IsUndefined()) {
      if (!value.IsNumber() || !(value.As<Napi::Number>().DoubleValue() >= 0))
        throw Napi::TypeError::New(env, "forward: options.encodeMs must be a number >= 0");
      encode_ms = value.As<Napi::Number>().DoubleValue();
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) entries[i].cache = caches[i].get();
  std::shared_ptr<Engine> engine = engine_;
  return queue_forward(env, engine->decoder->dims().vocab, std::move(entries),
                       [engine, caches, encode_ms](std::vector<ForwardEntry>& batch, float* logits, int32_t* best, float* logprob) {
                         return engine->turns.forward(encode_ms, [&] { engine->decoder->forward(batch, logits, best, logprob); });
                       });
}

// encodeImages(pixels, n, side, keepIntermediates): see addon_vision.h.
Napi::Value ModelWrap::EncodeImages(const Napi::CallbackInfo& info) {
  if (!engine_->vision) throw Napi::Error::New(info.Env(), "encodeImages: this model was loaded without vision dims");
  std::shared_ptr<Engine> engine = engine_;
  return queue_encode_images(info, [engine](const float* pixels, int64_t n, int64_t side, bool keep) {
    ComputeTurns::Encode turn(engine->turns);
    return engine->vision->encode(pixels, n, side, keep, [&turn] { turn.between_layers(); });
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

void register_cpu_model(Napi::Env env, Napi::Object exports) {
  auto* classes = new CpuClasses();
  env.SetInstanceData(classes);
  Napi::Function sequence = SequenceWrap::Init(env, "NativeSequence");
  classes->sequence_constructor = Napi::Persistent(sequence);
  Napi::Function model = ModelWrap::Init(env);
  classes->model_constructor = Napi::Persistent(model);
  exports.DefineProperties(
      {Napi::PropertyDescriptor::Value("NativeModel", model, napi_enumerable),
       Napi::PropertyDescriptor::Value("loadModel", Napi::Function::New(env, LoadModel), napi_enumerable),
       Napi::PropertyDescriptor::Value("NativeSequence", sequence, napi_enumerable),
       Napi::PropertyDescriptor::Value("supportedKernelSets",
                                       Napi::Function::New(env, SupportedKernelSets, "supportedKernelSets"), napi_enumerable)});
}

}  // namespace scriptorium
