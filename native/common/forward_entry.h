// One sequence's new tokens in a batched forward call, and the checks both decoders (CPU and GPU)
// apply to it before touching any cache.
#pragma once
#include <cstdint>
#include <vector>

#include "common/decoder_dims.h"
#include "common/kv_slot_rules.h"

namespace scriptorium {

class KvCache;  // the CPU decoder's cache (cpu/cpu_decoder.h); the GPU decoder takes its caches beside the entries

// One sequence's new tokens in a batched forward call.
struct ForwardEntry {
  KvCache* cache = nullptr;
  std::vector<int32_t> ids;            // [n] token ids, n >= 1
  std::vector<float> embeds;           // [embed_rows.size(), hidden] rows replacing token embeddings
  std::vector<int32_t> embed_rows;     // offsets within `ids` whose embedding is replaced
  bool want_logits = true;             // write the full logits row of the last token
  std::vector<int32_t> banned;         // ids the returned argmax skips (any order)
  int64_t prompt_tokens = 0;           // the whole prompt when `ids` are a part of it (a prefill in chunks); 0: unsaid
};

// Throws std::invalid_argument unless `entry` can be appended to a sequence in the state `rules`:
// ids and banned ids inside the vocabulary, at least one token, room in the context, one token per
// call past a windowed prompt, hidden_size floats per replaced embedding row inside the tokens.
void check_forward_entry(const DecoderDims& dims, const ForwardEntry& entry, const KvSlotRules& rules);

}  // namespace scriptorium
