#!/usr/bin/env bash
# The native tests for arm64 on any Linux machine: cross-compiles them with aarch64-linux-gnu-g++
# into native/test/build-aarch64 (run.sh, which then builds the arm64 kernel sets and no x86 one)
# and runs each program under qemu-aarch64 once per emulated CPU: `max` (every feature the emulator
# has) and `cortex-a72` (an armv8.0 core without BF16, dot products or I8MM), so each arm64 set runs
# and the dispatch falls back. NATIVE_TEST_EMULATED tells the programs to leave out their largest
# shapes where an emulator is slowest. Needs g++-aarch64-linux-gnu and qemu-user (Debian packages).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sysroot=/usr/aarch64-linux-gnu  # the cross compiler's Debian sysroot: the programs' libraries

for cpu in max cortex-a72; do
  echo "=== arm64 under qemu-aarch64 -cpu $cpu"
  CXX=aarch64-linux-gnu-g++ AR=aarch64-linux-gnu-ar NM=aarch64-linux-gnu-nm \
    NATIVE_TEST_BUILD="$here/build-aarch64" NATIVE_TEST_RUNNER="qemu-aarch64 -L $sysroot -cpu $cpu" NATIVE_TEST_EMULATED=1 \
    bash "$here/run.sh"
done
