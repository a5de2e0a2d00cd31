#include "common/addon_forward.h"

#include <cstring>
#include <string>

namespace scriptorium {

namespace {

bool is_typed(const Napi::Value& v, napi_typedarray_type type) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == type;
}

}  // namespace

Precision read_precision(const Napi::Object& options) {
  const Napi::Value value = options.Get("precision");
  const std::string name = value.IsString() ? value.As<Napi::String>().Utf8Value() : "";
  if (name != "exact" && name != "fast")
    throw Napi::RangeError::New(options.Env(), "options.precision must be 'exact' or 'fast', got '" + name + "'");
  return name == "fast" ? Precision::Fast : Precision::Exact;
}

KvCacheDtype read_kv_cache_dtype(const Napi::CallbackInfo& info) {
  const std::string name = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  if (name != "f16" && name != "f32") throw Napi::TypeError::New(info.Env(), "createSequence: kvCache must be 'f16' or 'f32'");
  return name == "f32" ? KvCacheDtype::F32 : KvCacheDtype::F16;
}

DecoderDims read_decoder_dims(const Napi::Object& o) {
  auto integer = [&](const char* key) {
    Napi::Value v = o.Get(key);
    if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string("dims.") + key + " must be a number");
    return v.As<Napi::Number>().Int64Value();
  };
  auto real = [&](const char* key) {
    Napi::Value v = o.Get(key);
    if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string("dims.") + key + " must be a number");
    return v.As<Napi::Number>().FloatValue();
  };
  auto boolean = [&](const char* key) { return o.Get(key).ToBoolean().Value(); };
  return decoder_dims_from(integer, real, boolean);
}

void read_forward_input(const Napi::Object& item, ForwardEntry& entry) {
  Napi::Env env = item.Env();
  Napi::Value ids = item.Get("ids");
  if (!is_typed(ids, napi_int32_array)) throw Napi::TypeError::New(env, "forward: entry.ids must be an Int32Array");
  Napi::Int32Array id_array = ids.As<Napi::Int32Array>();
  entry.ids.assign(id_array.Data(), id_array.Data() + id_array.ElementLength());
  Napi::Value embeds = item.Get("embeds");
  Napi::Value rows = item.Get("embedRows");
  if (!embeds.IsUndefined() || !rows.IsUndefined()) {
    if (!is_typed(embeds, napi_float32_array) || !is_typed(rows, napi_int32_array))
      throw Napi::TypeError::New(env, "forward: entry.embeds must be a Float32Array and entry.embedRows an Int32Array");
    Napi::Float32Array e = embeds.As<Napi::Float32Array>();
    Napi::Int32Array r = rows.As<Napi::Int32Array>();
    entry.embeds.assign(e.Data(), e.Data() + e.ElementLength());
    entry.embed_rows.assign(r.Data(), r.Data() + r.ElementLength());
  }
  Napi::Value want_logits = item.Get("logits");
  if (!want_logits.IsUndefined()) {
    if (!want_logits.IsBoolean()) throw Napi::TypeError::New(env, "forward: entry.logits must be a boolean");
    entry.want_logits = want_logits.As<Napi::Boolean>().Value();
  }
  Napi::Value prompt_tokens = item.Get("promptTokens");
  if (!prompt_tokens.IsUndefined()) {
    if (!prompt_tokens.IsNumber() || prompt_tokens.As<Napi::Number>().Int64Value() < 1 ||
        prompt_tokens.As<Napi::Number>().DoubleValue() != static_cast<double>(prompt_tokens.As<Napi::Number>().Int64Value()))
      throw Napi::TypeError::New(env, "forward: entry.promptTokens must be a positive integer");
    entry.prompt_tokens = prompt_tokens.As<Napi::Number>().Int64Value();
  }
  Napi::Value banned = item.Get("banned");
  if (!banned.IsUndefined()) {
    if (!is_typed(banned, napi_int32_array)) throw Napi::TypeError::New(env, "forward: entry.banned must be an Int32Array");
    Napi::Int32Array b = banned.As<Napi::Int32Array>();
    entry.banned.assign(b.Data(), b.Data() + b.ElementLength());
  }
}

ForwardWorker::ForwardWorker(Napi::Env env, int64_t vocab, std::vector<ForwardEntry> entries, Run run)
    : Napi::AsyncWorker(env),
      deferred_(Napi::Promise::Deferred::New(env)),
      vocab_(vocab),
      entries_(std::move(entries)),
      run_(std::move(run)) {}

void ForwardWorker::Execute() {
  try {
    size_t rows = 0;
    for (const ForwardEntry& entry : entries_) rows += entry.want_logits ? 1 : 0;
    logits_.resize(rows * vocab_);
    best_.resize(entries_.size());
    logprob_.resize(entries_.size());
    compute_ms_ = run_(entries_, logits_.data(), best_.data(), logprob_.data());
  } catch (const std::exception& e) {
    SetError(e.what());
  }
}

void ForwardWorker::OnOK() {
  Napi::Float32Array logits = Napi::Float32Array::New(Env(), logits_.size());
  std::memcpy(logits.Data(), logits_.data(), logits_.size() * sizeof(float));
  Napi::Int32Array best = Napi::Int32Array::New(Env(), best_.size());
  std::memcpy(best.Data(), best_.data(), best_.size() * sizeof(int32_t));
  Napi::Float32Array logprob = Napi::Float32Array::New(Env(), logprob_.size());
  std::memcpy(logprob.Data(), logprob_.data(), logprob_.size() * sizeof(float));
  Napi::Object out = Napi::Object::New(Env());
  out.Set("logits", logits);
  out.Set("best", best);
  out.Set("logprob", logprob);
  out.Set("computeMs", Napi::Number::New(Env(), compute_ms_));
  deferred_.Resolve(out);
}

Napi::Promise queue_forward(Napi::Env env, int64_t vocab, std::vector<ForwardEntry> entries, ForwardWorker::Run run) {
  auto* worker = new ForwardWorker(env, vocab, std::move(entries), std::move(run));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace scriptorium
