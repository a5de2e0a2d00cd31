#include "addon_forward_input.h"

namespace scriptorium {

namespace {

bool is_typed(const Napi::Value& v, napi_typedarray_type type) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == type;
}

}  // namespace

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
  Napi::Value banned = item.Get("banned");
  if (!banned.IsUndefined()) {
    if (!is_typed(banned, napi_int32_array)) throw Napi::TypeError::New(env, "forward: entry.banned must be an Int32Array");
    Napi::Int32Array b = banned.As<Napi::Int32Array>();
    entry.banned.assign(b.Data(), b.Data() + b.ElementLength());
  }
}

}  // namespace scriptorium
