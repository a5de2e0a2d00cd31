#!/usr/bin/env bash
# Builds the Vulkan backend's tests into native/vulkan/test/build and runs them: each *_test.cc is
# its own program (shaders compiled by glslc, the CPU's scalar kernels as the reference; the device
# rules). Does nothing but say so when this machine lacks what building the backend needs (see ../detect.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
vulkan="$here/.."
missing="$(bash "$vulkan/detect.sh")"
if [[ -n "$missing" ]]; then
  echo "Vulkan backend not built: missing $missing (Debian packages); shader tests skipped"
  exit 0
fi
build="$here/build"
mkdir -p "$build"
CXX="${CXX:-g++}"

shaders=("$vulkan"/shaders/*.comp)
header="$build/vulkan_shaders.h"
newest="$(ls -t "$vulkan"/shaders/* "$vulkan"/*.h "$vulkan"/*.cc "$vulkan"/embed-shaders.py "$here"/*.cc "$here"/*.h | head -n 1)"
if [[ ! -f "$header" || "$newest" -nt "$header" ]]; then
  echo "compile shaders"
  python3 "$vulkan/embed-shaders.py" "$header" "${shaders[@]}"
fi
# Each *_test.cc is its own program over the backend's sources and the CPU's scalar kernels.
status=0
sources=("$vulkan"/instance.cc "$vulkan"/device.cc "$vulkan"/buffers.cc "$vulkan"/pipelines.cc "$vulkan"/shader_ops.cc
  "$vulkan"/gpu_vision_ops.cc "$vulkan/../src/kernels_scalar.cc")
for test in "$here"/*_test.cc; do
  name="$(basename "$test" .cc)"
  exe="$build/$name"
  if [[ ! -f "$exe" || "$header" -nt "$exe" || "$newest" -nt "$exe" ]]; then
    echo "compile $name.cc"
    "$CXX" -std=c++17 -O2 -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$build" -I"$vulkan" \
      "$test" "${sources[@]}" -ldl -o "$exe"
  fi
  echo "== $name"
  "$exe" || status=1
done
exit "$status"
