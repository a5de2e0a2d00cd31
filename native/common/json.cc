#include "common/json.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace scriptorium {

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& member : object)
    if (member.first == key) return &member.second;
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const char* text, size_t length) : p_(text), begin_(text), end_(text + length) {}

  JsonValue parse_document() {
    JsonValue value = parse_value(0);
    skip_whitespace();
    if (p_ != end_) fail("unexpected trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw JsonError(std::string("malformed JSON at byte ") + std::to_string(p_ - begin_) + ": " + what);
  }

  void skip_whitespace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool consume_literal(const char* word) {
    const char* q = p_;
    for (; *word; ++word, ++q)
      if (q >= end_ || *q != *word) return false;
    p_ = q;
    return true;
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    if (++values_ > kMaxJsonValues) fail("too many values");
    skip_whitespace();
    if (p_ >= end_) fail("unexpected end of input");
    JsonValue value;
    switch (*p_) {
      case '{': parse_object(value, depth); break;
      case '[': parse_array(value, depth); break;
      case '"':
        value.kind = JsonValue::Kind::String;
        value.string = parse_string();
        break;
      case 't':
      case 'f':
        value.kind = JsonValue::Kind::Bool;
        if (consume_literal("true")) value.boolean = true;
        else if (!consume_literal("false")) fail("invalid literal");
        break;
      case 'n':
        if (!consume_literal("null")) fail("invalid literal");
        break;
      default: parse_number(value); break;
    }
    return value;
  }

  void parse_object(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::Object;
    ++p_;
    std::set<std::string> keys;
    skip_whitespace();
    if (p_ < end_ && *p_ == '}') { ++p_; return; }
    for (;;) {
      skip_whitespace();
      if (p_ >= end_ || *p_ != '"') fail("expected a string key");
      std::string key = parse_string();
      if (!keys.insert(key).second) fail("duplicate key");
      skip_whitespace();
      if (p_ >= end_ || *p_ != ':') fail("expected ':'");
      ++p_;
      value.object.emplace_back(std::move(key), parse_value(depth + 1));
      skip_whitespace();
      if (p_ < end_ && *p_ == ',') { ++p_; continue; }
      if (p_ < end_ && *p_ == '}') { ++p_; return; }
      fail("expected ',' or '}'");
    }
  }

  void parse_array(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::Array;
    ++p_;
    skip_whitespace();
    if (p_ < end_ && *p_ == ']') { ++p_; return; }
    for (;;) {
      value.array.push_back(parse_value(depth + 1));
      skip_whitespace();
      if (p_ < end_ && *p_ == ',') { ++p_; continue; }
      if (p_ < end_ && *p_ == ']') { ++p_; return; }
      fail("expected ',' or ']'");
    }
  }

  unsigned parse_hex4() {
    if (end_ - p_ < 4) fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      char c = *p_;
      code <<= 4;
      if (c >= '0' && c <= '9') code |= c - '0';
      else if (c >= 'a' && c <= 'f') code |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') code |= c - 'A' + 10;
      else fail("invalid \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    ++p_;  // opening quote
    std::string out;
    for (;;) {
      if (p_ >= end_) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in string");
      if (c != '\\') { out += static_cast<char>(c); continue; }
      if (p_ >= end_) fail("unterminated escape");
      char e = *p_++;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') fail("unpaired surrogate");
            p_ += 2;
            unsigned low = parse_hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("invalid low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("invalid escape");
      }
    }
  }

  void parse_number(JsonValue& value) {
    const char* start = p_;
    bool integral = true;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') fail("invalid value");
    if (*p_ == '0') ++p_;
    else while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ < end_ && *p_ == '.') {
      integral = false;
      ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') fail("invalid fraction");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') fail("invalid exponent");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    std::string digits(start, p_);
    value.kind = JsonValue::Kind::Number;
    value.number = std::strtod(digits.c_str(), nullptr);
    if (integral && digits.size() <= 18) {
      value.is_integer = true;
      value.integer = std::strtoll(digits.c_str(), nullptr, 10);
    }
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  size_t values_ = 0;
};

}  // namespace

JsonValue parse_json(const char* text, size_t length) { return Parser(text, length).parse_document(); }

}  // namespace scriptorium
