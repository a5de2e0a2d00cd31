// The file of a node's packed weights (native/cpu/packed_weights_file.h): a new file is filled and
// published, a second opening maps it filled with the same bytes, and any file that does not match
// its key and sizes exactly (another key, other sizes, a damaged header, a truncated or a padded
// file, a half-written one left by a crash) is replaced, never mapped. Also: two threads opening
// the same file at once pack it once (the lock). Prints one line per test and "N passed, M
// failed"; exits non-zero on any failure.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu/packed_weights_file.h"
#include "test/test_harness.h"

using namespace scriptorium;
using scriptorium_test::finish;
using scriptorium_test::fmt;
using scriptorium_test::run;

namespace {

const std::vector<size_t> kSizes = {64, 5000, 1, 3 * 4096};

std::vector<std::string> g_dirs;  // removed at the end

std::string fresh_dir(const std::string& name) {
  const std::string dir = std::filesystem::temp_directory_path() / ("scriptorium-packed-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  g_dirs.push_back(dir);
  return dir + "/nested";  // created by the file
}

uint8_t value_of(size_t slot, size_t i) { return static_cast<uint8_t>(slot * 31 + i * 7 + 1); }

// Fills every slot with a pattern of its own and publishes the file.
void fill(PackedWeightsFile& file, const std::vector<size_t>& sizes) {
  for (size_t s = 0; s < sizes.size(); ++s) {
    uint8_t* p = static_cast<uint8_t*>(file.slot(s).get());
    for (size_t i = 0; i < sizes[s]; ++i) p[i] = value_of(s, i);
  }
  file.finish();
}

std::string check_contents(const PackedWeightsFile& file, const std::vector<size_t>& sizes) {
  for (size_t s = 0; s < sizes.size(); ++s) {
    const uint8_t* p = static_cast<const uint8_t*>(file.slot(s).get());
    if (reinterpret_cast<uintptr_t>(p) % 64 != 0) return fmt("slot %g is not 64-byte aligned", double(s));
    for (size_t i = 0; i < sizes[s]; ++i)
      if (p[i] != value_of(s, i)) return fmt("slot %g byte %g differs", double(s), double(i));
  }
  return "";
}

// Writes a file for `key`, then damages it with `damage(path)`; a new opening must not use it.
std::string replaced_after(const std::string& name, void (*damage)(const std::string& path)) {
  const std::string dir = fresh_dir(name);
  std::string path;
  {
    PackedWeightsFile file(dir, "key", kSizes);
    fill(file, kSizes);
    path = file.path();
  }
  damage(path);
  PackedWeightsFile again(dir, "key", kSizes);
  if (again.filled()) return "a damaged file was mapped as complete";
  fill(again, kSizes);
  PackedWeightsFile third(dir, "key", kSizes);
  if (!third.filled()) return "the replacement was not published";
  return check_contents(third, kSizes);
}

}  // namespace

int main() {
  run("a new file is filled, published and mapped filled by the next opening", [] {
    const std::string dir = fresh_dir("roundtrip");
    std::string path;
    {
      PackedWeightsFile file(dir, "decoder of checkpoint A", kSizes);
      if (file.filled()) return std::string("a new file claims to be filled");
      fill(file, kSizes);
      if (std::string e = check_contents(file, kSizes); !e.empty()) return "after finish: " + e;
      path = file.path();
    }
    if (std::filesystem::exists(path + ".partial")) return std::string("the partial file was left behind");
    PackedWeightsFile again(dir, "decoder of checkpoint A", kSizes);
    if (!again.filled()) return std::string("the published file was not used");
    if (again.path() != path) return std::string("the same key named another file");
    return check_contents(again, kSizes);
  });

  run("another key is another file; other sizes replace the file", [] {
    const std::string dir = fresh_dir("keys");
    PackedWeightsFile a(dir, "key one", kSizes);
    fill(a, kSizes);
    PackedWeightsFile b(dir, "key two", kSizes);
    if (b.filled() || b.path() == a.path()) return std::string("a second key reused the first key's file");
    std::vector<size_t> other = kSizes;
    other[1] += 1;
    PackedWeightsFile c(dir, "key one", other);
    if (c.filled()) return std::string("a file with other sizes was used");
    return std::string();
  });

  run("a file left unfinished is never published", [] {
    const std::string dir = fresh_dir("unfinished");
    std::string path;
    {
      PackedWeightsFile file(dir, "key", kSizes);
      path = file.path();
    }
    if (std::filesystem::exists(path) || std::filesystem::exists(path + ".partial")) return std::string("an unfinished file remained");
    PackedWeightsFile again(dir, "key", kSizes);
    return again.filled() ? std::string("an unfinished file was used") : std::string();
  });

  run("a damaged header is replaced", [] {
    return replaced_after("header", [](const std::string& path) {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(8);
      f.put('\x7f');
    });
  });

  run("a truncated file is replaced", [] {
    return replaced_after("truncated", [](const std::string& path) { truncate(path.c_str(), 4096); });
  });

  run("a file longer than its layout is replaced", [] {
    return replaced_after("padded", [](const std::string& path) {
      std::ofstream f(path, std::ios::app | std::ios::binary);
      f.put('x');
    });
  });

  run("openings at once: one fills, the other waits and maps the result", [] {
    const std::string dir = fresh_dir("race");
    int filled_by_waiter = 0, fills = 0;
    std::string error;
    auto open_and_fill = [&](int* was_filled) {
      PackedWeightsFile file(dir, "key", kSizes);
      if (file.filled()) {
        *was_filled = 1;
        error += check_contents(file, kSizes);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the other opening waits on the lock
        fill(file, kSizes);
        ++fills;
      }
    };
    int first = 0, second = 0;
    std::thread a(open_and_fill, &first), b(open_and_fill, &second);
    a.join();
    b.join();
    filled_by_waiter = first + second;
    if (fills != 1 || filled_by_waiter != 1) return fmt("%g fills and %g openings of the filled file, wanted 1 and 1", fills, filled_by_waiter);
    return error;
  });

  for (const std::string& dir : g_dirs) std::filesystem::remove_all(dir);
  return finish();
}
