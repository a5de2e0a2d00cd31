// The harness of the native test programs: run() one named check, which returns "" when it holds or
// says what went wrong (a thrown exception fails the check too), then finish() prints the counts and
// gives main's exit status.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace scriptorium_test {

inline int g_passed = 0;
inline int g_failed = 0;

inline void run(const std::string& name, const std::function<std::string()>& check) {
  std::string error;
  try {
    error = check();
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
  }
  if (error.empty()) {
    ++g_passed;
    std::printf("ok    %s\n", name.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL  %s: %s\n", name.c_str(), error.c_str());
  }
  std::fflush(stdout);
}

/** Prints "N passed, M failed"; 0 when nothing failed, else 1. */
inline int finish() {
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace scriptorium_test
