// Memory-mapped safetensors checkpoints (single file or sharded with model.safetensors.index.json).
// Tensors are zero-copy views into the mapping. Every size and offset read from a file is validated
// before use; problems raise ModelFileError with the file name and what is wrong.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace scriptorium {

class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType { BF16, F16, F32 };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

struct TensorView {
  std::string name;
  std::string file;  // shard the tensor lives in (for error messages)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the shard's mapping; valid while the Checkpoint lives
  size_t nbytes = 0;

  int64_t numel() const;
  std::string shape_string() const;
};

// One mapped .safetensors file.
class SafetensorsFile {
 public:
  // Maps and validates `path`: header length within the file, header is a JSON object, every
  // entry has a known dtype, a non-negative shape, offsets inside the data section that match the
  // shape's byte size, and no two tensors overlap.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
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
  // The tensor `name`, checked against the expected shape and dtype (taken from config.json by
  // the caller). Throws ModelFileError naming the tensor when missing or different.
  const TensorView& get(const std::string& name, const std::vector<int64_t>& shape,
                        DType dtype = DType::BF16) const;
  const std::map<std::string, const TensorView*>& tensors() const { return tensors_; }
  size_t total_bytes() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> tensors_;
};

}  // namespace scriptorium
