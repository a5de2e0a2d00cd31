// A small strict JSON parser for safetensors headers and index files. Parses a whole document into a
// tree; every error names the byte offset where parsing stopped.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace scriptorium {

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  bool is_integer = false;  // number written without fraction/exponent and fits int64
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  // Object members in document order; duplicate keys are rejected by the parser.
  std::vector<std::pair<std::string, JsonValue>> object;

  const JsonValue* find(const std::string& key) const;
};

// Most values one document may hold: bounds the parser's memory whatever the input (a real
// safetensors header holds about ten values per tensor).
constexpr size_t kMaxJsonValues = size_t{1} << 21;

// Parses `text` (exactly one JSON value, optional surrounding whitespace, at most kMaxJsonValues
// values nested at most 64 deep). Throws JsonError.
JsonValue parse_json(const char* text, size_t length);

}  // namespace scriptorium
