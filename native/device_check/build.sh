#!/usr/bin/env bash
# Builds the device check into OUT (default build/device-check): the program, the script that runs
# it (run.sh), the Vulkan loader for machines that lack one (lib/), and the plans with their CPU
# references (plans/, written by bench/engine/device-check-plans.ts: needs `npm run build` first).
# The folder is what travels to a GPU machine; bench/README.md says how.
#
#   bash native/device_check/build.sh [OUT]
#
# The program links the C++ runtime statically and the C library and libgcc_s dynamically: it runs
# on x86-64 Linux with glibc 2.34 or later (Debian 12, Ubuntu 22.04, RHEL 9 and newer), which the
# build checks.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "${1:-$root/build/device-check}" && cd "${1:-$root/build/device-check}" && pwd)"
missing="$(bash "$root/native/vulkan/detect.sh")"
if [[ -n "$missing" ]]; then
  echo "the device check needs the Vulkan backend, and this machine lacks $missing (Debian packages)"
  exit 1
fi
[[ -f "$root/dist/bench/engine/device-check-plans.js" ]] || { echo "the TypeScript is not built: npm run build"; exit 1; }

# The backend's library, shared with its tests (built already where they ran).
library="$root/native/vulkan/build"
bash "$root/native/vulkan/build-library.sh" "$library"
CXX="${CXX:-g++}"
echo "link device-check"
# -ffp-contract=off: the synthetic generator rounds as the TypeScript one does only when no product
# is contracted into an FMA.
"$CXX" -std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$library" -I"$root/native" \
  "$here/device_check.cc" "$here/synthetic_checkpoint.cc" "$here/glibc_compat.cc" "$library/libgpu.a" -ldl -static-libstdc++ \
  -o "$out/device-check"
newest_glibc="$(objdump -T "$out/device-check" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n 1)"
if [[ "$(printf '%s\n' "$newest_glibc" GLIBC_2.34 | sort -V | tail -n 1)" != GLIBC_2.34 ]]; then
  echo "device-check needs $newest_glibc, newer than the 2.34 it promises: $(objdump -T "$out/device-check" | grep "$newest_glibc")"
  exit 1
fi
cp "$here/run.sh" "$out/run.sh"
libraries="$(ldconfig -p)"  # read whole: a reader that stops early would fail the pipe under pipefail
loader="$(awk '/libvulkan\.so\.1 .*x86-64/ { print $NF }' <<<"$libraries" | head -n 1)"
[[ -n "$loader" ]] || { echo "no libvulkan.so.1 to carry (Debian libvulkan1)"; exit 1; }
mkdir -p "$out/lib"
cp -L "$loader" "$out/lib/libvulkan.so.1"
rm -rf "$out/plans"
node "$root/dist/bench/engine/device-check-plans.js" "$out/plans" "$out/device-check"
echo "device check in $out ($(du -sh "$out" | cut -f1)): bash $out/run.sh"
