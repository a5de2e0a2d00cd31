// Reading one entry of forward()'s batch from JavaScript, shared by the CPU and GPU models.
#pragma once
#include <napi.h>

#include "decoder.h"

namespace scriptorium {

// Fills entry.ids, embeds, embed_rows, want_logits and banned from
// {ids: Int32Array, embeds?: Float32Array, embedRows?: Int32Array, logits?: boolean, banned?: Int32Array};
// throws a TypeError naming the field that has the wrong type. The cache is left to the caller.
void read_forward_input(const Napi::Object& item, ForwardEntry& entry);

}  // namespace scriptorium
