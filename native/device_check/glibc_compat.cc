// Keeps the device check runnable on glibc 2.34 and 2.35 (RHEL 9, Ubuntu 22.04: most CUDA images)
// when it is built on a newer one. The statically linked C++ runtime brings std::random_device,
// which the program never uses but which names arc4random, a function glibc added in 2.36; defined
// here, the program takes this one, read from the kernel's random source as glibc's is, and needs
// no glibc newer than 2.34.
#include <sys/random.h>

#include <cstdint>

extern "C" uint32_t arc4random(void) {
  uint32_t value = 0;
  while (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
  }
  return value;
}
