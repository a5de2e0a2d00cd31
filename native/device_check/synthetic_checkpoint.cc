#include "device_check/synthetic_checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

namespace scriptorium {

namespace {

constexpr int kLevels = 65536;

uint16_t f32_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Φ⁻¹(p), 0 < p < 1: Acklam's rational approximation, as the TypeScript generator computes it.
double inverse_normal_cdf(double p) {
  static const double a[] = {-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239};
  static const double b[] = {-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572};
  static const double c[] = {-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783};
  static const double d[] = {0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416};
  const auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  const double low = 0.02425;
  if (p < low) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - low) return -tail(std::sqrt(-2 * std::log(1 - p)));
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// BF16 bits of mean + std · z for the 65,536 equiprobable standard-normal quantiles z.
std::vector<uint16_t> normal_bf16_table(double mean, double std) {
  std::vector<uint16_t> table(kLevels);
  for (int i = 0; i < kLevels; ++i)
    table[i] = f32_to_bf16(static_cast<float>(mean + std * inverse_normal_cdf((i + 0.5) / kLevels)));
  return table;
}

uint32_t fnv1a32(const std::string& text) {
  uint32_t h = 0x811c9dc5u;
  for (unsigned char ch : text) h = (h ^ ch) * 0x01000193u;
  return h;
}

uint32_t mix32(uint32_t z) {  // MurmurHash3's finaliser
  z = (z ^ (z >> 16)) * 0x85ebca6bu;
  z = (z ^ (z >> 13)) * 0xc2b2ae35u;
  return z ^ (z >> 16);
}

uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

// One tensor's values: a xoshiro128** stream seeded from (seed, name) through splitmix32, each
// 32-bit draw giving two values (its low half, then its high half, as table indices).
void fill_tensor(uint16_t* out, uint64_t count, const std::vector<uint16_t>& table, uint32_t seed, const std::string& name) {
  uint32_t state = fnv1a32(name) ^ mix32(seed);
  const auto next = [&] { return mix32(state += 0x9e3779b9u); };
  uint32_t s0 = next(), s1 = next(), s2 = next(), s3 = next();
  if ((s0 | s1 | s2 | s3) == 0) s0 = 1;
  for (uint64_t i = 0; i < count; i += 2) {
    const uint32_t r = rotl(s1 * 5, 7) * 9;
    const uint32_t t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    out[i] = table[r & 0xffffu];
    if (i + 1 < count) out[i + 1] = table[r >> 16];
  }
}

uint64_t element_count(const SyntheticTensor& tensor) {
  uint64_t n = 1;
  for (int64_t side : tensor.shape) {
    if (side < 0 || (side > 0 && n > UINT64_MAX / 4 / static_cast<uint64_t>(side)))
      throw std::runtime_error(tensor.name + ": a shape too large or negative");
    n *= static_cast<uint64_t>(side);
  }
  return n;
}

}  // namespace

void write_synthetic_checkpoint(const std::string& dir, const std::vector<SyntheticTensor>& tensors, uint32_t seed,
                                int threads) {
  // The header: each tensor's dtype, shape and byte range, back to back in order.
  std::string header = "{";
  std::vector<uint64_t> offsets, counts;
  uint64_t data_bytes = 0;
  for (const SyntheticTensor& tensor : tensors) {
    const uint64_t count = element_count(tensor);
    offsets.push_back(data_bytes);
    counts.push_back(count);
    if (header.size() > 1) header += ",";
    header += "\"" + tensor.name + "\":{\"dtype\":\"BF16\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i) header += (i ? "," : "") + std::to_string(tensor.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data_bytes) + "," + std::to_string(data_bytes + 2 * count) + "]}";
    data_bytes += 2 * count;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  const uint64_t header_bytes = header.size();
  const uint64_t file_bytes = 8 + header_bytes + data_bytes;

  const std::string path = dir + "/model.safetensors";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(file_bytes)) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot size " + path + " to " + std::to_string(file_bytes) + " bytes: " + reason);
  }
  void* mapping = ::mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) throw std::runtime_error("cannot map " + path + ": " + std::strerror(errno));
  auto* bytes = static_cast<uint8_t*>(mapping);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(header_bytes >> (8 * i));  // little-endian length
  std::memcpy(bytes + 8, header.data(), header_bytes);
  uint16_t* data = reinterpret_cast<uint16_t*>(bytes + 8 + header_bytes);

  // One quantile table per distinct init, built before the threads share them.
  std::map<std::pair<double, double>, std::vector<uint16_t>> tables;
  for (const SyntheticTensor& tensor : tensors) {
    auto& table = tables[{tensor.mean, tensor.std}];
    if (table.empty()) table = normal_bf16_table(tensor.mean, tensor.std);
  }
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t t; (t = next++) < tensors.size();)
      fill_tensor(data + offsets[t] / 2, counts[t], tables.at({tensors[t].mean, tensors[t].std}), seed, tensors[t].name);
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  const bool unmapped = ::munmap(mapping, file_bytes) == 0;
  if (!unmapped) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace scriptorium
