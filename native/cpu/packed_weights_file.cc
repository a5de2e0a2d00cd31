#include "cpu/packed_weights_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "cpu/ops.h"

namespace scriptorium {
namespace {

// Reserves the file's `bytes` on disk (0, or an errno value), so that a full disk fails here and not
// with SIGBUS on a write to the mapping.
int reserve_file(int fd, off_t bytes) {
#if defined(__APPLE__)
  fstore_t store{F_ALLOCATEALL, F_PEOFPOSMODE, 0, bytes, 0};
  if (fcntl(fd, F_PREALLOCATE, &store) == -1) return errno;
  return ftruncate(fd, bytes) == 0 ? 0 : errno;
#else
  return posix_fallocate(fd, 0, bytes);
#endif
}

// Layout: a header (magic, key length, slot count, data offset, total bytes; then the key and each
// slot's size), padded to a 2 MiB boundary so the data can sit on huge pages, then the slots, each
// starting on a 4 KiB boundary.
constexpr char kMagic[8] = {'S', 'C', 'R', 'P', 'K', 'W', '0', '1'};
constexpr size_t kFixedHeader = sizeof kMagic + 4 * sizeof(uint64_t);
constexpr size_t kDataAlign = size_t{2} << 20;
constexpr size_t kSlotAlign = 4096;

size_t align_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error("packed weights file " + path + ": " + what + ": " + std::strerror(errno));
}

// FNV-1a: names the file after its key (the whole key is checked inside the file).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void make_directories(const std::string& dir) {
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string part = at == std::string::npos ? dir : dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) throw io_error("cannot create its folder", dir);
    if (at == std::string::npos) return;
  }
}

struct Layout {
  std::vector<uint8_t> header;  // up to the data offset's padding
  size_t data_offset = 0, total = 0;
  std::vector<size_t> offsets;
};

Layout layout_for(const std::string& key, const std::vector<size_t>& sizes) {
  Layout l;
  const uint64_t fields[4] = {key.size(), sizes.size(), 0, 0};
  l.header.resize(kFixedHeader + key.size() + sizes.size() * sizeof(uint64_t));
  l.data_offset = align_up(l.header.size(), kDataAlign);
  size_t at = l.data_offset;
  for (size_t size : sizes) {
    l.offsets.push_back(at);
    at = align_up(at + size, kSlotAlign);
  }
  l.total = at;
  uint8_t* h = l.header.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  std::memcpy(h + sizeof kMagic, fields, sizeof fields);
  const uint64_t placed[2] = {l.data_offset, l.total};
  std::memcpy(h + sizeof kMagic + 2 * sizeof(uint64_t), placed, sizeof placed);
  std::memcpy(h + kFixedHeader, key.data(), key.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t size = sizes[i];
    std::memcpy(h + kFixedHeader + key.size() + i * sizeof(uint64_t), &size, sizeof size);
  }
  return l;
}

// Whether the file at `fd` is exactly `expected`'s header followed by its data: the header is read
// and compared byte for byte, the size checked, so nothing past the file's end is ever mapped.
bool matches(int fd, const Layout& expected) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != expected.total) return false;
  std::vector<uint8_t> header(expected.header.size());
  size_t read_bytes = 0;
  while (read_bytes < header.size()) {
    const ssize_t n = pread(fd, header.data() + read_bytes, header.size() - read_bytes, static_cast<off_t>(read_bytes));
    if (n <= 0) return false;
    read_bytes += static_cast<size_t>(n);
  }
  return header == expected.header;
}

std::shared_ptr<void> map_file(int fd, size_t bytes, int protection, const std::string& path) {
  void* p = mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw io_error("cannot map it", path);
  return std::shared_ptr<void>(p, [bytes](void* at) { munmap(at, bytes); });
}

// Maps a complete file read-only when it is there and matches; null otherwise.
std::shared_ptr<void> map_if_complete(const std::string& path, const Layout& expected) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return nullptr;
    throw io_error("cannot open it", path);
  }
  std::shared_ptr<void> mapping;
  try {
    if (matches(fd, expected)) mapping = map_file(fd, expected.total, PROT_READ, path);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  if (mapping) advise_huge_pages(static_cast<uint8_t*>(mapping.get()) + expected.data_offset, expected.total - expected.data_offset);
  return mapping;
}

}  // namespace

PackedWeightsFile::PackedWeightsFile(const std::string& dir, const std::string& key, const std::vector<size_t>& sizes) {
  char name[40];
  std::snprintf(name, sizeof name, "packed-%016llx.bin", static_cast<unsigned long long>(fnv1a(key)));
  path_ = dir + "/" + name;
  lock_path_ = path_ + ".lock";
  temp_path_ = path_ + ".partial";
  const Layout layout = layout_for(key, sizes);
  offsets_ = layout.offsets;
  mapped_bytes_ = layout.total;
  if ((mapping_ = map_if_complete(path_, layout))) {
    filled_ = true;
    return;
  }
  make_directories(dir);
  lock_fd_ = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw io_error("cannot open its lock", lock_path_);
  while (flock(lock_fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      close(lock_fd_);
      throw io_error("cannot lock it", lock_path_);
    }
  }
  try {
    // Another process may have written it while this one waited for the lock.
    if ((mapping_ = map_if_complete(path_, layout))) {
      filled_ = true;
    } else {
      const int fd = open(temp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) throw io_error("cannot create it", temp_path_);
      const int allocated = reserve_file(fd, static_cast<off_t>(layout.total));
      if (allocated != 0) {
        close(fd);
        errno = allocated;
        throw io_error("cannot allocate " + std::to_string(layout.total) + " bytes", temp_path_);
      }
      try {
        mapping_ = map_file(fd, layout.total, PROT_READ | PROT_WRITE, temp_path_);
      } catch (...) {
        close(fd);
        throw;
      }
      close(fd);
      std::memcpy(mapping_.get(), layout.header.data(), layout.header.size());
    }
  } catch (...) {
    mapping_.reset();
    unlink(temp_path_.c_str());
    close(lock_fd_);
    lock_fd_ = -1;
    throw;
  }
  if (filled_) {
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

PackedWeightsFile::~PackedWeightsFile() {
  if (lock_fd_ < 0) return;
  unlink(temp_path_.c_str());  // never finished: nobody else may map a half-written file
  close(lock_fd_);
}

std::shared_ptr<void> PackedWeightsFile::slot(size_t i) const {
  if (i >= offsets_.size()) throw std::out_of_range("packed weights file: slot " + std::to_string(i) + " of " + std::to_string(offsets_.size()));
  return std::shared_ptr<void>(mapping_, static_cast<uint8_t*>(mapping_.get()) + offsets_[i]);
}

void PackedWeightsFile::finish() {
  if (filled_ || lock_fd_ < 0) throw std::logic_error("packed weights file: finish() on a file that is not being written");
  // On disk before it is published: a crash must not leave a complete-looking file of zeros.
  if (msync(mapping_.get(), mapped_bytes_, MS_SYNC) != 0) throw io_error("cannot write it out", temp_path_);
  if (rename(temp_path_.c_str(), path_.c_str()) != 0) throw io_error("cannot publish it", path_);
  mprotect(mapping_.get(), mapped_bytes_, PROT_READ);
  advise_huge_pages(mapping_.get(), mapped_bytes_);
  close(lock_fd_);
  lock_fd_ = -1;
  filled_ = true;
}

}  // namespace scriptorium
