#include "common/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/json.h"
#include "common/float16.h"

namespace scriptorium {

namespace {

// An index file larger than this is not plausible (real ones are ~100 KB).
constexpr uint64_t kMaxIndexBytes = 100'000'000;

struct DTypeInfo {
  const char* name;
  DType dtype;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {"BF16", DType::BF16, 2}, {"F16", DType::F16, 2},         {"F32", DType::F32, 4},        {"F64", DType::F64, 8},
    {"I64", DType::I64, 8},   {"I32", DType::I32, 4},         {"I16", DType::I16, 2},        {"I8", DType::I8, 1},
    {"U64", DType::U64, 8},   {"U32", DType::U32, 4},         {"U16", DType::U16, 2},        {"U8", DType::U8, 1},
    {"BOOL", DType::BOOL, 1}, {"F8_E4M3", DType::F8_E4M3, 1}, {"F8_E5M2", DType::F8_E5M2, 1},
};

const DTypeInfo& dtype_info(DType dtype) {
  for (const DTypeInfo& info : kDTypes)
    if (info.dtype == dtype) return info;
  throw std::logic_error("unknown DType");
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw ModelFileError("model file " + file + ": " + what);
}

bool parse_dtype(const std::string& s, DType& out) {
  for (const DTypeInfo& info : kDTypes)
    if (s == info.name) {
      out = info.dtype;
      return true;
    }
  return false;
}

std::string read_small_file(const std::string& path, uint64_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open");
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path, "cannot read");
  if (static_cast<uint64_t>(size) > limit)
    fail(path, std::to_string(size) + " bytes is implausibly large (at most " + std::to_string(limit) + ")");
  in.seekg(0);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_offset(const JsonValue& v) { return v.kind == JsonValue::Kind::Number && v.is_integer && v.integer >= 0; }

// IEEE half -> float, exact (every F16 value is an F32 value).
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

/* out[n] = the float tensor t[n] as F32 (exact) */
void widen_to_f32(const TensorView& t, float* out, size_t n) {
  if (t.dtype == DType::BF16) for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load_u16(t.data + 2 * i));
  else if (t.dtype == DType::F16) for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load_u16(t.data + 2 * i));
  else if (t.dtype == DType::F32) for (size_t i = 0; i < n; ++i) out[i] = load_f32(t.data + 4 * i);
  else throw std::logic_error("widen_to_f32 on a non-float tensor");
}

// The BF16 nearest to each of the 65,536 F16 values: a conversion by lookup.
const std::vector<uint16_t>& f16_to_bf16_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t h = 0; h < t.size(); ++h) t[h] = f32_to_bf16(f16_to_f32(static_cast<uint16_t>(h)));
    return t;
  }();
  return table;
}

/* out[i] = the F16 or F32 tensor t[i] rounded to BF16 (nearest even), i in [begin, end) */
void narrow_range(const TensorView& t, uint16_t* out, size_t begin, size_t end) {
  if (t.dtype == DType::F16) {
    const uint16_t* table = f16_to_bf16_table().data();
    for (size_t i = begin; i < end; ++i) out[i] = table[load_u16(t.data + 2 * i)];
  } else {
    for (size_t i = begin; i < end; ++i) out[i] = f32_to_bf16(load_f32(t.data + 4 * i));
  }
}

/* out[n] = the F16 or F32 tensor t[n] rounded to BF16; large tensors on every hardware thread (a whole
   F32 checkpoint is billions of values, converted before the model's own pool exists) */
void narrow_to_bf16(const TensorView& t, uint16_t* out, size_t n) {
  if (t.dtype != DType::F16 && t.dtype != DType::F32) throw std::logic_error("narrow_to_bf16 needs an F16 or F32 tensor");
  constexpr size_t kPerThread = size_t{1} << 20;
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), n / kPerThread + 1);
  std::vector<std::thread> helpers;
  const size_t step = (n + threads - 1) / threads;
  for (size_t k = 1; k < threads; ++k) {
    const size_t begin = std::min(n, k * step), end = std::min(n, (k + 1) * step);
    try {
      helpers.emplace_back(narrow_range, std::cref(t), out, begin, end);
    } catch (const std::system_error&) {
      narrow_range(t, out, begin, end);  // no thread to spare: this one does the share
    }
  }
  narrow_range(t, out, 0, std::min(n, step));
  for (std::thread& helper : helpers) helper.join();
}

// The mapped pages of a converted tensor are not read again: drop them from the process's memory
// (the file stays in the page cache, which the kernel may reclaim).
void release_pages(const uint8_t* data, size_t nbytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + nbytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

const char* dtype_name(DType dtype) { return dtype_info(dtype).name; }
size_t dtype_size(DType dtype) { return dtype_info(dtype).size; }
bool is_float_weight(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16 || dtype == DType::F32; }

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) throw ModelFileError("tensor " + name + ": element count overflows");
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsHeader parse_safetensors_header(const char* json, size_t length, uint64_t data_size, const std::string& file) {
  if (length > kMaxHeaderBytes)
    fail(file, "header length " + std::to_string(length) + " is implausibly large (at most " +
                   std::to_string(kMaxHeaderBytes) + ")");
  JsonValue header;
  try {
    header = parse_json(json, length);
  } catch (const JsonError& e) {
    fail(file, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (header.kind != JsonValue::Kind::Object) fail(file, "header is not a JSON object");

  SafetensorsHeader out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.object) {
    if (name == "__metadata__") {
      if (entry.kind != JsonValue::Kind::Object) fail(file, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.object)
        if (value.kind == JsonValue::Kind::String) out.metadata[key] = value.string;
      continue;
    }
    const std::string where = "tensor " + name + ": ";
    if (entry.kind != JsonValue::Kind::Object) fail(file, where + "entry is not an object");
    const JsonValue* dtype = entry.find("dtype");
    const JsonValue* shape = entry.find("shape");
    const JsonValue* offsets = entry.find("data_offsets");
    if (!dtype || dtype->kind != JsonValue::Kind::String) fail(file, where + "missing dtype");
    if (!shape || shape->kind != JsonValue::Kind::Array) fail(file, where + "missing shape");
    if (!offsets || offsets->kind != JsonValue::Kind::Array || offsets->array.size() != 2)
      fail(file, where + "data_offsets must be [begin, end]");
    TensorView view;
    view.name = name;
    view.file = base_name(file);
    if (!parse_dtype(dtype->string, view.dtype)) fail(file, where + "unsupported dtype " + dtype->string);
    uint64_t numel = 1;
    for (const JsonValue& d : shape->array) {
      if (d.kind != JsonValue::Kind::Number || !d.is_integer || d.integer < 0)
        fail(file, where + "shape entries must be non-negative integers");
      view.shape.push_back(d.integer);
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d.integer), &numel) || numel > static_cast<uint64_t>(INT64_MAX))
        fail(file, where + "shape " + view.shape_string() + "... has more elements than 2^63");
    }
    uint64_t shape_bytes;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(view.dtype)), &shape_bytes))
      fail(file, where + "shape " + view.shape_string() + " of " + dtype->string + " has more bytes than 2^64");
    const JsonValue& b = offsets->array[0];
    const JsonValue& e = offsets->array[1];
    if (!is_offset(b) || !is_offset(e) || e.integer < b.integer)
      fail(file, where + "data_offsets must be non-negative integers with begin <= end");
    const uint64_t begin = static_cast<uint64_t>(b.integer), end = static_cast<uint64_t>(e.integer);
    if (end > data_size)
      fail(file, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     "] run past the end of the data section (" + std::to_string(data_size) +
                     " bytes; the file may be truncated)");
    if (end - begin != shape_bytes)
      fail(file, where + "byte range of " + std::to_string(end - begin) + " bytes does not match shape " +
                     view.shape_string() + " of " + dtype->string + " (" + std::to_string(shape_bytes) + " bytes)");
    view.offset = begin;
    view.nbytes = end - begin;
    if (view.nbytes) ranges.emplace_back(begin, end);
    out.tensors.push_back(std::move(view));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      fail(file, "tensor data ranges overlap at byte " + std::to_string(ranges[i].first));
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  fingerprint_ = path + " dev " + std::to_string(st.st_dev) + " inode " + std::to_string(st.st_ino) + " bytes " +
                 std::to_string(file_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  }
  mapping_ = mmap(nullptr, file_size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    fail(path, "mmap failed");
  }
  mapped_bytes_ = file_size;
  const uint8_t* bytes = static_cast<const uint8_t*>(mapping_);

  try {
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
    if (header_len > file_size - 8)
      fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                     std::to_string(file_size) + " bytes)");
    SafetensorsHeader header =
        parse_safetensors_header(reinterpret_cast<const char*>(bytes + 8), header_len, file_size - 8 - header_len, path);
    const uint8_t* data = bytes + 8 + header_len;
    for (TensorView& view : header.tensors) {
      view.data = data + view.offset;
      std::string name = view.name;
      tensors_.emplace(std::move(name), std::move(view));
    }
    metadata_ = std::move(header.metadata);
  } catch (...) {
    munmap(mapping_, mapped_bytes_);
    mapping_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) munmap(mapping_, mapped_bytes_);
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (!file_exists(index_path)) {
    const std::string single = dir + "/model.safetensors";
    if (!file_exists(single)) fail(dir, "no model.safetensors.index.json or model.safetensors in the directory");
    files_.push_back(std::make_unique<SafetensorsFile>(single));
    for (const auto& [name, view] : files_.back()->tensors()) tensors_[name] = &view;
    return;
  }
  const std::string text = read_small_file(index_path, kMaxIndexBytes);
  JsonValue index;
  try {
    index = parse_json(text.data(), text.size());
  } catch (const JsonError& e) {
    fail(index_path, std::string("not valid JSON (") + e.what() + ")");
  }
  const JsonValue* weight_map = index.kind == JsonValue::Kind::Object ? index.find("weight_map") : nullptr;
  if (!weight_map || weight_map->kind != JsonValue::Kind::Object) fail(index_path, "missing weight_map object");

  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [name, shard] : weight_map->object) {
    if (shard.kind != JsonValue::Kind::String || shard.string.empty() ||
        shard.string.find('/') != std::string::npos || shard.string.find("..") != std::string::npos)
      fail(index_path, "weight_map entry for " + name + " is not a plain file name");
    by_shard[shard.string].push_back(name);
  }
  for (const auto& [shard, names] : by_shard) {
    const std::string shard_path = dir + "/" + shard;
    if (!file_exists(shard_path)) fail(index_path, "shard " + shard + " named in the index is missing");
    files_.push_back(std::make_unique<SafetensorsFile>(shard_path));
    const auto& in_file = files_.back()->tensors();
    for (const std::string& name : names) {
      auto it = in_file.find(name);
      if (it == in_file.end()) fail(shard_path, "tensor " + name + " listed in the index is missing from this shard");
      tensors_[name] = &it->second;
    }
  }
}

const TensorView& Checkpoint::checked(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(dir_, "missing tensor " + name);
  const TensorView& view = *it->second;
  if (view.shape != shape) {
    TensorView expected;
    expected.shape = shape;
    fail(view.file, "tensor " + name + " has shape " + view.shape_string() + " but config.json implies " +
                        expected.shape_string());
  }
  if (!is_float_weight(view.dtype))
    fail(view.file, "tensor " + name + " has dtype " + dtype_name(view.dtype) + "; a weight must be BF16, F16 or F32");
  read_.insert(name);
  return view;
}

bool SafetensorsFile::maps(const void* data, size_t nbytes) const {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), base = reinterpret_cast<uintptr_t>(mapping_);
  return mapping_ != nullptr && begin >= base && nbytes <= mapped_bytes_ && begin - base <= mapped_bytes_ - nbytes;
}

std::string Checkpoint::fingerprint() const {
  std::string all;
  for (const auto& file : files_) all += file->fingerprint() + "\n";
  return all;
}

void Checkpoint::release_mapped(const void* data, size_t nbytes) const {
  for (const auto& file : files_)
    if (file->maps(data, nbytes)) release_pages(static_cast<const uint8_t*>(data), nbytes);
}

const TensorView& Checkpoint::get(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView& view = checked(name, shape);
  if (view.dtype == DType::BF16) return view;
  auto done = converted_.find(name);
  if (done != converted_.end()) return done->second;
  const size_t n = static_cast<size_t>(view.numel());
  std::unique_ptr<uint16_t[]> copy(new uint16_t[n]);
  narrow_to_bf16(view, copy.get(), n);
  release_pages(view.data, view.nbytes);
  TensorView bf16 = view;
  bf16.dtype = DType::BF16;
  bf16.data = reinterpret_cast<const uint8_t*>(copy.get());
  bf16.nbytes = n * 2;
  converted_bytes_ += bf16.nbytes;
  converted_data_.push_back(std::move(copy));
  return converted_.emplace(name, std::move(bf16)).first->second;
}

std::vector<float> Checkpoint::f32(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView& view = checked(name, shape);
  std::vector<float> out(static_cast<size_t>(view.numel()));
  widen_to_f32(view, out.data(), out.size());
  return out;
}

size_t Checkpoint::total_bytes() const {
  size_t total = 0;
  for (const auto& [name, view] : tensors_) total += view->nbytes;
  return total;
}

std::vector<std::string> Checkpoint::unread_tensors() const {
  std::vector<std::string> names;
  for (const auto& [name, view] : tensors_)
    if (!read_.count(name)) names.push_back(name);
  return names;
}

}  // namespace scriptorium
