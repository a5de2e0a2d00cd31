// Loading F16 and F32 weights (native/common/safetensors.h): every F16 value and F32 values around
// each rounding boundary go through a real file and Checkpoint::get / f32, checked against an
// independent reference (exact arithmetic in double); header sizes that overflow 64 bits are refused.
// Prints one line per test and "N passed, M failed"; exits non-zero on any failure.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors.h"
#include "test/test_harness.h"

using namespace scriptorium;

namespace {

using scriptorium_test::finish;
using scriptorium_test::run;

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// The value of IEEE half bits, computed from the definition.
double f16_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v;
  if (exponent == 31) v = mantissa ? NAN : INFINITY;
  else if (exponent == 0) v = std::ldexp(mantissa, -24);
  else v = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}

// The BF16 nearest to x (ties to an even last bit), by comparing the two neighbours in double.
uint16_t bf16_nearest(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const float f = static_cast<float>(x);  // every x here is an F32 value
  const uint32_t bits = float_bits(f);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0xffff) == 0 || std::isinf(f)) return down;
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double lo = bits_to_float(static_cast<uint32_t>(down) << 16);
  const uint32_t up_bits = static_cast<uint32_t>(up) << 16;
  // Past the largest finite BF16 the next value up is infinity, which rounding treats as 2^128.
  const double hi = (up_bits & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), x) : bits_to_float(up_bits);
  const double d_lo = std::fabs(x - lo), d_hi = std::fabs(hi - x);
  if (d_lo < d_hi) return down;
  if (d_hi < d_lo) return up;
  return (down & 1) ? up : down;
}

// A one-tensor safetensors file in a fresh directory; returns the directory.
std::string write_checkpoint(const char* dtype, const void* data, size_t bytes, size_t count) {
  std::string pattern = (std::filesystem::temp_directory_path() / "scriptorium-safetensors-test-XXXXXX").string();
  char* dir = mkdtemp(pattern.data());
  if (!dir) throw std::runtime_error("mkdtemp failed");
  std::string header = std::string("{\"w\":{\"dtype\":\"") + dtype + "\",\"shape\":[" + std::to_string(count) +
                       "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}";
  const uint64_t length = header.size();
  const std::string path = std::string(dir) + "/model.safetensors";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(&length, 8, 1, f);
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(data, 1, bytes, f);
  std::fclose(f);
  return dir;
}

void remove_checkpoint(const std::string& dir) {
  std::remove((dir + "/model.safetensors").c_str());
  rmdir(dir.c_str());
}

// Loads `values` stored as `dtype` and compares get() (BF16) and f32() with the reference.
template <typename T>
std::string check_loading(const char* dtype, const std::vector<T>& values, const std::function<double(T)>& value_of) {
  const std::string dir = write_checkpoint(dtype, values.data(), values.size() * sizeof(T), values.size());
  std::string err;
  {
    Checkpoint checkpoint(dir);
    const std::vector<int64_t> shape = {static_cast<int64_t>(values.size())};
    const TensorView& bf16 = checkpoint.get("w", shape);
    const std::vector<float> wide = checkpoint.f32("w", shape);
    if (checkpoint.converted_bytes() != values.size() * 2) err = "converted_bytes " + std::to_string(checkpoint.converted_bytes());
    for (size_t i = 0; i < values.size() && err.empty(); ++i) {
      const double exact = value_of(values[i]);
      uint16_t got;
      std::memcpy(&got, bf16.data + 2 * i, 2);
      const uint16_t want = bf16_nearest(exact);
      const bool nan = std::isnan(exact);
      if (nan ? (got & 0x7f80) != 0x7f80 || (got & 0x7f) == 0 : got != want)
        err = std::string(dtype) + " value " + std::to_string(i) + " (" + std::to_string(exact) + "): BF16 " + hex(got) + ", want " + hex(want);
      else if (nan ? !std::isnan(wide[i]) : static_cast<double>(wide[i]) != exact)
        err = std::string(dtype) + " value " + std::to_string(i) + ": F32 " + std::to_string(wide[i]) + ", want " + std::to_string(exact);
    }
  }
  remove_checkpoint(dir);
  return err;
}

std::string header_error(const std::string& json, uint64_t data_size) {
  try {
    parse_safetensors_header(json.data(), json.size(), data_size, "test.safetensors");
  } catch (const ModelFileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

int main() {
  run("every F16 value is read exactly as F32 and rounded to the nearest BF16 (ties to even)", [] {
    std::vector<uint16_t> values(65536);
    for (uint32_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint16_t>(i);
    return check_loading<uint16_t>("F16", values, [](uint16_t h) { return f16_value(h); });
  });

  run("F32 values at, beside and between BF16 rounding boundaries round to nearest even", [] {
    std::vector<uint32_t> bits;
    std::mt19937 rng(17);
    for (int i = 0; i < 20000; ++i) {
      const uint32_t high = static_cast<uint32_t>(rng()) & 0xffff0000u;
      for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, static_cast<uint32_t>(rng() & 0xffffu)}) bits.push_back(high | low);
    }
    // The largest finite values round to infinity exactly from the halfway point on; subnormals, zeros, NaN.
    for (uint32_t b : {0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0xff7f8000u, 0x00000001u, 0x00008000u, 0x00018000u,
                       0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu})
      bits.push_back(b);
    return check_loading<uint32_t>("F32", bits, [](uint32_t b) { return static_cast<double>(bits_to_float(b)); });
  });

  run("BF16 weights are returned in place, without a copy", [] {
    std::vector<uint16_t> values = {0x3f80, 0xc000, 0x0001};
    const std::string dir = write_checkpoint("BF16", values.data(), 6, 3);
    std::string err;
    {
      Checkpoint checkpoint(dir);
      const TensorView& view = checkpoint.get("w", {3});
      if (checkpoint.converted_bytes() != 0) err = "a BF16 tensor was copied";
      if (std::memcmp(view.data, values.data(), 6) != 0) err = "data differs";
    }
    remove_checkpoint(dir);
    return err;
  });

  run("shapes whose element or byte count overflows 64 bits are refused before any offset check", [] {
    const char* shapes[] = {"[4294967296,4294967296]", "[65536,65536,65536,65536]", "[4611686018427387904,4]",
                            "[3074457345618258603,6]", "[9223372036854775807,2]", "[4611686018427387904,2]"};
    for (const char* shape : shapes) {
      const std::string json = std::string("{\"t\":{\"dtype\":\"F32\",\"shape\":") + shape + ",\"data_offsets\":[0,0]}}";
      const std::string err = header_error(json, 0);
      if (err.find("tensor t: shape") == std::string::npos) return std::string(shape) + ": " + (err.empty() ? "accepted" : err);
    }
    return std::string();
  });

  run("offsets at the 64-bit limit and data past the end are refused", [] {
    const std::string big = "{\"t\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[9223372036854775807,9223372036854775811]}}";
    if (header_error(big, 1000).empty()) return std::string("huge offsets accepted");
    const std::string past = "{\"t\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    if (header_error(past, 3).find("run past the end") == std::string::npos) return std::string("data past the end accepted");
    return std::string();
  });

  run("a header of more values than the parser's bound is refused, not parsed into memory", [] {
    std::string json = "{\"__metadata__\":{\"a\":[";
    for (size_t i = 0; i < (size_t{1} << 21); ++i) json += "0,";
    json += "0]}}";
    const std::string err = header_error(json, 0);
    return err.find("too many values") == std::string::npos ? "got: " + err : std::string();
  });

  return finish();
}
