#include "safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "json.h"

namespace scriptorium {

namespace {

// A header larger than this is not a plausible safetensors header (real ones are ~100 KB-1 MB).
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw ModelFileError("model file " + file + ": " + what);
}

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "BF16") out = DType::BF16;
  else if (s == "F16") out = DType::F16;
  else if (s == "F32") out = DType::F32;
  else return false;
  return true;
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
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

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::F32: return "F32";
  }
  return "?";
}

size_t dtype_size(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
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
    if (header_len > kMaxHeaderBytes) fail(path, "header length " + std::to_string(header_len) + " is implausibly large");
    const uint64_t data_size = file_size - 8 - header_len;
    const uint8_t* data = bytes + 8 + header_len;

    JsonValue header;
    try {
      header = parse_json(reinterpret_cast<const char*>(bytes + 8), header_len);
    } catch (const JsonError& e) {
      fail(path, std::string("header is not valid JSON (") + e.what() + ")");
    }
    if (header.kind != JsonValue::Kind::Object) fail(path, "header is not a JSON object");

    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, entry] : header.object) {
      if (name == "__metadata__") {
        if (entry.kind != JsonValue::Kind::Object) fail(path, "__metadata__ is not an object");
        for (const auto& [key, value] : entry.object)
          if (value.kind == JsonValue::Kind::String) metadata_[key] = value.string;
        continue;
      }
      const std::string where = "tensor " + name + ": ";
      if (entry.kind != JsonValue::Kind::Object) fail(path, where + "entry is not an object");
      const JsonValue* dtype = entry.find("dtype");
      const JsonValue* shape = entry.find("shape");
      const JsonValue* offsets = entry.find("data_offsets");
      if (!dtype || dtype->kind != JsonValue::Kind::String) fail(path, where + "missing dtype");
      if (!shape || shape->kind != JsonValue::Kind::Array) fail(path, where + "missing shape");
      if (!offsets || offsets->kind != JsonValue::Kind::Array || offsets->array.size() != 2)
        fail(path, where + "data_offsets must be [begin, end]");
      TensorView view;
      view.name = name;
      view.file = base_name(path);
      if (!parse_dtype(dtype->string, view.dtype))
        fail(path, where + "unsupported dtype " + dtype->string + " (expected BF16, F16 or F32)");
      uint64_t numel = 1;
      for (const JsonValue& d : shape->array) {
        if (d.kind != JsonValue::Kind::Number || !d.is_integer || d.integer < 0 || d.integer > (int64_t{1} << 40))
          fail(path, where + "shape entries must be non-negative integers");
        view.shape.push_back(d.integer);
        numel *= static_cast<uint64_t>(d.integer);
        if (numel > (uint64_t{1} << 40)) fail(path, where + "shape is implausibly large");
      }
      const JsonValue& b = offsets->array[0];
      const JsonValue& e = offsets->array[1];
      if (b.kind != JsonValue::Kind::Number || !b.is_integer || b.integer < 0 || e.kind != JsonValue::Kind::Number ||
          !e.is_integer || e.integer < b.integer)
        fail(path, where + "data_offsets must be non-negative integers with begin <= end");
      const uint64_t begin = static_cast<uint64_t>(b.integer), end = static_cast<uint64_t>(e.integer);
      if (end > data_size)
        fail(path, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                       "] run past the end of the data section (" + std::to_string(data_size) +
                       " bytes; the file may be truncated)");
      if (end - begin != numel * dtype_size(view.dtype))
        fail(path, where + "byte range of " + std::to_string(end - begin) + " bytes does not match shape " +
                       view.shape_string() + " of " + dtype->string);
      view.data = data + begin;
      view.nbytes = end - begin;
      if (view.nbytes) ranges.emplace_back(begin, end);
      tensors_.emplace(name, std::move(view));
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second)
        fail(path, "tensor data ranges overlap at byte " + std::to_string(ranges[i].first));
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
  const std::string text = read_small_file(index_path);
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

const TensorView& Checkpoint::get(const std::string& name, const std::vector<int64_t>& shape, DType dtype) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(dir_, "missing tensor " + name);
  const TensorView& view = *it->second;
  if (view.shape != shape) {
    TensorView expected;
    expected.shape = shape;
    fail(view.file, "tensor " + name + " has shape " + view.shape_string() + " but config.json implies " +
                        expected.shape_string());
  }
  if (view.dtype != dtype)
    fail(view.file, "tensor " + name + " has dtype " + dtype_name(view.dtype) + ", expected " + dtype_name(dtype));
  return view;
}

size_t Checkpoint::total_bytes() const {
  size_t total = 0;
  for (const auto& [name, view] : tensors_) total += view->nbytes;
  return total;
}

}  // namespace scriptorium
