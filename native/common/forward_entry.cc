#include "common/forward_entry.h"

#include <stdexcept>
#include <string>

namespace scriptorium {

void check_forward_entry(const DecoderDims& dims, const ForwardEntry& entry, const KvSlotRules& rules) {
  const int64_t n = static_cast<int64_t>(entry.ids.size());
  if (n == 0) throw std::invalid_argument("forward: a sequence was given no tokens");
  for (int32_t id : entry.ids)
    if (id < 0 || id >= dims.vocab)
      throw std::invalid_argument("forward: token id " + std::to_string(id) + " outside the vocabulary [0, " +
                                  std::to_string(dims.vocab) + ")");
  rules.check_append(n, entry.prompt_tokens);
  if (entry.embeds.size() != entry.embed_rows.size() * static_cast<size_t>(dims.hidden))
    throw std::invalid_argument("forward: embeds must hold hidden_size floats per replaced row");
  for (int32_t row : entry.embed_rows)
    if (row < 0 || row >= n) throw std::invalid_argument("forward: embed row outside the sequence's new tokens");
  for (int32_t id : entry.banned)
    if (id < 0 || id >= dims.vocab) throw std::invalid_argument("forward: banned id outside the vocabulary");
}

}  // namespace scriptorium
