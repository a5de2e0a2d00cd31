// A model's packed weights kept in one file per node, checkpoint and kernel layout, mapped read-only
// by every process that loads that checkpoint there: N worker processes on a node share one copy
// in the page cache instead of holding N copies in anonymous memory (docs/engine.md, "Weights
// shared by a node's processes").
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace scriptorium {

class PackedWeightsFile {
 public:
  // The file in `dir` for `key` (everything the packed bytes depend on) that holds weights of
  // `sizes` bytes, in that order. Opens it when a complete file for this key and these sizes is
  // there (filled() is true); otherwise, holding an exclusive lock on the name so that processes
  // starting together pack once, creates a new one for the caller to fill and finish(). A file with
  // another key, other sizes or a damaged header is replaced. Throws std::runtime_error naming the
  // path on any I/O error.
  PackedWeightsFile(const std::string& dir, const std::string& key, const std::vector<size_t>& sizes);
  ~PackedWeightsFile();
  PackedWeightsFile(const PackedWeightsFile&) = delete;
  PackedWeightsFile& operator=(const PackedWeightsFile&) = delete;

  const std::string& path() const { return path_; }
  // Whether the weights came from an existing file: then slots are read-only and already hold them.
  bool filled() const { return filled_; }
  // Weight i's bytes inside the mapping (64-byte aligned); the pointer keeps the mapping alive.
  std::shared_ptr<void> slot(size_t i) const;
  // After every slot is written: publishes the file under its name for other processes, maps it
  // read-only and releases the lock. Slots handed out before stay valid.
  void finish();

 private:
  std::string path_, lock_path_, temp_path_;
  int lock_fd_ = -1;
  bool filled_ = false;
  std::shared_ptr<void> mapping_;
  size_t mapped_bytes_ = 0;
  std::vector<size_t> offsets_;  // of each slot from the mapping's start
};

}  // namespace scriptorium
