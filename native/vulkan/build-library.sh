#!/usr/bin/env bash
# Builds the Vulkan backend as a static library for programs outside the addon (the backend's tests,
# the device check): BUILD/vulkan_shaders.h (every shader compiled and embedded), BUILD/spirv/*.spv
# (for spirv-val), BUILD/gpu_probe_shaders.h (the probes' shaders) and BUILD/libgpu.a, which holds the backend (native/sources.gypi:
# vulkan_device_sources, vulkan_model_sources), the shared core (common_sources), the device
# ceilings probe and the CPU's scalar kernels (the tests' reference). Rebuilds only what is older
# than the sources. The caller checks first that this machine can build it (detect.sh).
#
#   bash native/vulkan/build-library.sh BUILD
#
# CXX is taken from the environment.
set -euo pipefail

build="$1"
vulkan="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native="$vulkan/.."
mkdir -p "$build"
CXX="${CXX:-g++}"

shaders=("$vulkan"/shaders/*.comp)
header="$build/vulkan_shaders.h"
newest="$(ls -t "$vulkan"/shaders/* "$native"/probes/shaders/* "$vulkan"/*.h "$vulkan"/*.cc "$vulkan"/embed-shaders.py | head -n 1)"
spirv="$build/spirv"
if [[ ! -f "$header" || ! -d "$spirv" || "$newest" -nt "$header" ]]; then
  echo "compile shaders"
  rm -rf "$spirv"
  python3 "$vulkan/embed-shaders.py" --keep-spirv "$spirv" "$header" "${shaders[@]}"
  python3 "$vulkan/embed-shaders.py" "$build/gpu_probe_shaders.h" "$native"/probes/shaders/*.comp
fi

sources="$(python3 - "$native/sources.gypi" <<'PY'
import ast, sys
v = ast.literal_eval(open(sys.argv[1]).read())["variables"]
print("\n".join(v["vulkan_device_sources"] + v["vulkan_model_sources"] + v["common_sources"] + v["probes_vulkan_sources"]))
PY
)"
FLAGS=(-std=c++17 -O2 -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$build" -I"$native")
library="$build/libgpu.a"
newest_native="$(ls -t "$header" "$native"/common/* "$native"/probes/gpu_ceilings.* "$native"/cpu/kernels* "$native"/sources.gypi | head -n 1)"
if [[ ! -f "$library" || "$newest" -nt "$library" || "$newest_native" -nt "$library" ]]; then
  mkdir -p "$build/obj"
  objs=()
  for path in $sources native/cpu/kernels_scalar.cc; do
    cc="$native/${path#native/}"
    obj="$build/obj/$(basename "$cc" .cc).o"
    echo "compile $(basename "$cc")"
    "$CXX" "${FLAGS[@]}" -c "$cc" -o "$obj"
    objs+=("$obj")
  done
  rm -f "$library"
  ar rcs "$library" "${objs[@]}"
fi
