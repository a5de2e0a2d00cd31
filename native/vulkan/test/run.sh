#!/usr/bin/env bash
# Builds the Vulkan backend's tests into native/vulkan/build (beside the backend's library,
# build-library.sh) and runs them: every compiled
# shader through spirv-val (also those no device here can run, such as the cooperative-matrix one),
# then each *_test.cc as its own program (the CPU's scalar kernels as the reference; the device rules). Does nothing but say so when this machine lacks what building the backend needs (see ../detect.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
vulkan="$here/.."
missing="$(bash "$vulkan/detect.sh")"
if [[ -n "$missing" ]]; then
  echo "Vulkan backend not built: missing $missing (Debian packages); shader tests skipped"
  exit 0
fi
build="$vulkan/build"
bash "$vulkan/build-library.sh" "$build"
spirv="$build/spirv"
status=0
if command -v spirv-val >/dev/null; then
  echo "== spirv-val"
  for module in "$spirv"/*.spv; do
    spirv-val --target-env vulkan1.1 "$module" || { echo "FAIL spirv-val $(basename "$module")"; status=1; }
  done
elif [[ "${SCRIPTORIUM_REQUIRE_VULKAN:-}" == 1 ]]; then
  echo "FAIL spirv-val is missing (Debian spirv-tools)"
  status=1
else
  echo "skip spirv-val: not installed (Debian spirv-tools)"
fi
# Each *_test.cc is its own program over the library; rebuilt when it or the library is newer.
library="$build/libgpu.a"
support="$(ls -t "$here"/*.h | head -n 1)"
CXX="${CXX:-g++}"
FLAGS=(-std=c++17 -O2 -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$build" -I"$vulkan/..")
for test in "$here"/*_test.cc; do
  name="$(basename "$test" .cc)"
  exe="$build/$name"
  if [[ ! -f "$exe" || "$library" -nt "$exe" || "$test" -nt "$exe" || "$support" -nt "$exe" ]]; then
    echo "compile $name.cc"
    "$CXX" "${FLAGS[@]}" "$test" "$library" -ldl -o "$exe"
  fi
  echo "== $name"
  "$exe" || status=1
done
exit "$status"
