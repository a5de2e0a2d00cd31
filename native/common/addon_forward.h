// The JavaScript face of a decoder that the CPU model (cpu/cpu_model.cc) and the GPU model
// (vulkan/gpu_model.cc) share: reading DecoderDims, reading forward()'s batch, and the async
// worker that runs one forward call off the event loop and packs its results.
#pragma once
#include <napi.h>

#include <functional>
#include <memory>
#include <vector>

#include "common/decoder_dims.h"
#include "common/forward_entry.h"
#include "common/kv_cache_dtype.h"
#include "common/precision.h"

namespace scriptorium {

// A model's sequence for JavaScript (NativeSequence, NativeGpuSequence): one KV cache (KvCache on
// the CPU, GpuKvCache on the device) and the engine that made it.
template <typename Engine, typename Cache>
class SequenceWrapOf : public Napi::ObjectWrap<SequenceWrapOf<Engine, Cache>> {
 public:
  static Napi::Function Init(Napi::Env env, const char* class_name) {
    using Self = SequenceWrapOf;
    return Self::DefineClass(env, class_name,
                             {Self::template InstanceAccessor<&Self::Length>("length"),
                              Self::template InstanceAccessor<&Self::PrefixLength>("prefixLength"),
                              Self::template InstanceAccessor<&Self::CacheBytes>("cacheBytes"),
                              Self::template InstanceMethod<&Self::Release>("release")});
  }
  explicit SequenceWrapOf(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SequenceWrapOf>(info) {}

  std::shared_ptr<Engine> engine;
  std::shared_ptr<Cache> cache;

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
  // Frees the cache now rather than at garbage collection (a forward call in flight keeps it until
  // it ends); the sequence is unusable afterwards.
  Napi::Value Release(const Napi::CallbackInfo& info) {
    cache.reset();
    return info.Env().Undefined();
  }
};

// The DecoderDims object of src/engine/model-config.ts; throws a TypeError naming a missing field.
DecoderDims read_decoder_dims(const Napi::Object& o);

// options.precision of loadModel and loadGpuModel: 'exact' or 'fast'; throws a RangeError otherwise.
Precision read_precision(const Napi::Object& options);

// createSequence(kvCache) of both models: 'f16' or 'f32'; throws a TypeError otherwise.
KvCacheDtype read_kv_cache_dtype(const Napi::CallbackInfo& info);

// Fills entry.ids, embeds, embed_rows, want_logits, banned and prompt_tokens from {ids: Int32Array,
// embeds?: Float32Array, embedRows?: Int32Array, logits?: boolean, banned?: Int32Array, promptTokens?: number};
// throws a TypeError naming the field that has the wrong type. The cache is left to the caller.
void read_forward_input(const Napi::Object& item, ForwardEntry& entry);

// Reads forward()'s batch argument, [{sequence, ...read_forward_input's fields}], into entries and
// returns each entry's cache. SequenceWrap is the model's sequence class (an ObjectWrap with
// `engine` and `cache` members); every sequence must be one of `sequence_class`, unreleased and
// made by `engine`.
template <typename SequenceWrap, typename Engine>
auto read_forward_batch(const Napi::CallbackInfo& info, const Napi::Function& sequence_class,
                        const std::shared_ptr<Engine>& engine, std::vector<ForwardEntry>& entries) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "forward(batch: array)");
  Napi::Array batch = info[0].As<Napi::Array>();
  entries.assign(batch.Length(), ForwardEntry{});
  std::vector<decltype(SequenceWrap::cache)> caches;
  for (uint32_t i = 0; i < batch.Length(); ++i) {
    Napi::Value item_value = batch.Get(i);
    if (!item_value.IsObject()) throw Napi::TypeError::New(env, "forward: batch entries must be objects");
    Napi::Object item = item_value.As<Napi::Object>();
    Napi::Value seq_value = item.Get("sequence");
    if (!seq_value.IsObject() || !seq_value.As<Napi::Object>().InstanceOf(sequence_class))
      throw Napi::TypeError::New(env, "forward: entry.sequence must come from createSequence()");
    SequenceWrap* sequence = SequenceWrap::Unwrap(seq_value.As<Napi::Object>());
    if (!sequence->cache) throw Napi::Error::New(env, "forward: the sequence was released");
    if (sequence->engine != engine) throw Napi::Error::New(env, "forward: the sequence belongs to another model");
    read_forward_input(item, entries[i]);
    caches.push_back(sequence->cache);
  }
  return caches;
}

// Runs one forward call on a libuv worker thread and resolves {logits: Float32Array [entries with
// logits, vocab], best: Int32Array [entries], logprob: Float32Array [entries], computeMs: number}.
class ForwardWorker : public Napi::AsyncWorker {
 public:
  // Takes its turn on the model (serialised with the model's other calls), fills logits, best and
  // logprob as Decoder::forward does and returns the milliseconds it held the model (computeMs);
  // throws to reject the promise. It holds (captures) whatever must outlive the call: the engine,
  // the sequences' caches.
  using Run = std::function<double(std::vector<ForwardEntry>& entries, float* logits, int32_t* best, float* logprob)>;

  ForwardWorker(Napi::Env env, int64_t vocab, std::vector<ForwardEntry> entries, Run run);

  Napi::Promise promise() const { return deferred_.Promise(); }
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  int64_t vocab_;
  std::vector<ForwardEntry> entries_;
  Run run_;
  std::vector<float> logits_;
  std::vector<int32_t> best_;
  std::vector<float> logprob_;
  double compute_ms_ = 0;
};

// Queues a ForwardWorker and returns its promise.
Napi::Promise queue_forward(Napi::Env env, int64_t vocab, std::vector<ForwardEntry> entries, ForwardWorker::Run run);

}  // namespace scriptorium
