#!/usr/bin/env bash
# Builds the Vulkan backend's tests into native/vulkan/test/build and runs them: the shader test
# (shaders compiled by glslc, the CPU's scalar kernels as the reference) and the device rules test.
# Does nothing but say so when this machine lacks what building the backend needs (see ../detect.sh).
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
newest="$(ls -t "$vulkan"/shaders/* "$vulkan"/*.h "$vulkan"/*.cc "$vulkan"/embed-shaders.py "$here"/*.cc | head -n 1)"
if [[ ! -f "$header" || "$newest" -nt "$header" ]]; then
  echo "compile shaders"
  python3 "$vulkan/embed-shaders.py" "$header" "${shaders[@]}"
fi
sources=("$vulkan"/instance.cc "$vulkan"/device.cc "$vulkan"/buffers.cc "$vulkan"/pipelines.cc "$vulkan"/shader_ops.cc
         "$vulkan/../src/kernels_scalar.cc")
for test in shader_ops_test device_test; do
  exe="$build/$test"
  if [[ ! -f "$exe" || "$header" -nt "$exe" || "$newest" -nt "$exe" ]]; then
    echo "compile $test.cc"
    "$CXX" -std=c++17 -O2 -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$build" -I"$vulkan" \
      "$here/$test.cc" "${sources[@]}" -ldl -o "$exe"
  fi
done
status=0
for test in shader_ops_test device_test; do
  echo "== $test"
  "$build/$test" || status=1
done
exit "$status"
