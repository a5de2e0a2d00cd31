// Memory-mapped safetensors checkpoints (single file or sharded with model.safetensors.index.json).
// BF16 tensors are zero-copy views into the mapping; F16 and F32 tensors the engine reads as BF16
// are converted once, on first use, by round-to-nearest-even. Every size and offset read from a
// file is validated with overflow-checked arithmetic before use; problems raise ModelFileError with
// the file name and what is wrong.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace scriptorium {

class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every dtype the safetensors format defines. The engine computes with the float ones (BF16, F16,
// F32); the others may sit in a checkpoint as buffers the model does not read.
enum class DType { BF16, F16, F32, F64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool is_float_weight(DType dtype);  // BF16, F16 or F32: a dtype the engine can load a weight from

// A header larger than this is refused (the safetensors format's own limit; real ones are ~1 MB).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorView {
  std::string name;
  std::string file;  // shard the tensor lives in (for error messages)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;            // first byte within the file's data section
  const uint8_t* data = nullptr;  // into the shard's mapping (or a converted copy); valid while the Checkpoint lives
  size_t nbytes = 0;

  int64_t numel() const;  // the product of the shape; validated not to overflow when the header was read
  std::string shape_string() const;
};

struct SafetensorsHeader {
  std::vector<TensorView> tensors;  // in header order; `data` is null
  std::map<std::string, std::string> metadata;
};

// Parses and validates the JSON header of a safetensors file whose data section holds `data_size`
// bytes: a JSON object whose entries have a known dtype, a shape of non-negative integers whose
// element count and byte size do not overflow, and data_offsets inside the data section that match
// that byte size; no two tensors overlap. `file` names the file in error messages.
SafetensorsHeader parse_safetensors_header(const char* json, size_t length, uint64_t data_size, const std::string& file);

// One mapped .safetensors file.
class SafetensorsFile {
 public:
  // Maps `path` and validates its header length and header (parse_safetensors_header).
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Which file this is and which version of it, from stat at open: path, device, inode, size and
  // modification time (a rewritten or replaced file differs in at least one).
  const std::string& fingerprint() const { return fingerprint_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Whether [data, data + nbytes) lies inside this file's mapping.
  bool maps(const void* data, size_t nbytes) const;

 private:
  std::string path_, fingerprint_;
  void* mapping_ = nullptr;
  size_t mapped_bytes_ = 0;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint directory.
class Checkpoint {
 public:
  // Opens `dir`/model.safetensors.index.json when present (every shard it names must exist and
  // hold exactly the tensors the weight map assigns to it), else `dir`/model.safetensors.
  explicit Checkpoint(const std::string& dir);

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor `name` as BF16 data, checked against the expected shape (taken from config.json by
  // the caller). A BF16 tensor is returned in place; an F16 or F32 one is converted once (round to
  // nearest even) into memory the Checkpoint owns. Throws ModelFileError naming the tensor when it
  // is missing, has another shape, or is no float tensor.
  const TensorView& get(const std::string& name, const std::vector<int64_t>& shape) const;
  // The tensor `name` as F32 values (exact for every float dtype), checked like get().
  std::vector<float> f32(const std::string& name, const std::vector<int64_t>& shape) const;

  const std::map<std::string, const TensorView*>& tensors() const { return tensors_; }
  size_t total_bytes() const;  // tensor bytes in the files
  // Every file's fingerprint (SafetensorsFile::fingerprint), in order: what a cache of weights
  // derived from this checkpoint is keyed on.
  std::string fingerprint() const;
  // Bytes of the BF16 copies made for F16 / F32 tensors: memory on top of the mapped files.
  size_t converted_bytes() const { return converted_bytes_; }
  // Tensors no get() / f32() call has asked for, sorted (buffers the model does not use).
  std::vector<std::string> unread_tensors() const;
  // Drops [data, data + nbytes) from the process's memory when it lies in a mapped file: weights
  // the engine has converted into a form of its own and does not read again (the file stays in the
  // page cache; a later read maps it back). Memory the Checkpoint owns is left alone.
  void release_mapped(const void* data, size_t nbytes) const;

 private:
  const TensorView& checked(const std::string& name, const std::vector<int64_t>& shape) const;

  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> tensors_;
  mutable std::map<std::string, TensorView> converted_;  // BF16 views of converted tensors
  mutable std::vector<std::unique_ptr<uint16_t[]>> converted_data_;
  mutable size_t converted_bytes_ = 0;
  mutable std::set<std::string> read_;  // names asked for
};

}  // namespace scriptorium
