#!/usr/bin/env bash
# Builds the Vulkan backend's tests into native/vulkan/test/build and runs them: every compiled
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
build="$here/build"
mkdir -p "$build"
CXX="${CXX:-g++}"

shaders=("$vulkan"/shaders/*.comp)
header="$build/vulkan_shaders.h"
newest="$(ls -t "$vulkan"/shaders/* "$vulkan"/*.h "$vulkan"/*.cc "$vulkan"/embed-shaders.py "$here"/*.cc "$here"/*.h | head -n 1)"
spirv="$build/spirv"
if [[ ! -f "$header" || ! -d "$spirv" || "$newest" -nt "$header" ]]; then
  echo "compile shaders"
  rm -rf "$spirv"
  python3 "$vulkan/embed-shaders.py" --keep-spirv "$spirv" "$header" "${shaders[@]}"
fi
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
# The backend (native/sources.gypi: vulkan_device_sources, vulkan_model_sources, common_sources) and
# the CPU's scalar kernels, the tests' reference, go into one library; each *_test.cc is its own
# program over it. Objects are rebuilt when anything above is newer than the library.
native="$vulkan/.."
sources="$(python3 - "$native/sources.gypi" <<'PY'
import ast, sys
v = ast.literal_eval(open(sys.argv[1]).read())["variables"]
print("\n".join(v["vulkan_device_sources"] + v["vulkan_model_sources"] + v["common_sources"]))
PY
)"
FLAGS=(-std=c++17 -O2 -Wall -Wextra -Wno-missing-field-initializers -pthread -I"$build" -I"$native")
library="$build/libgpu.a"
newest_native="$(ls -t "$newest" "$native"/common/* "$native"/cpu/kernels* "$native"/sources.gypi | head -n 1)"
if [[ ! -f "$library" || "$header" -nt "$library" || "$newest_native" -nt "$library" ]]; then
  mkdir -p "$build/obj"
  objs=()
  for path in $sources cpu/kernels_scalar.cc; do
    cc="$native/${path#native/}"
    obj="$build/obj/$(basename "$cc" .cc).o"
    echo "compile $(basename "$cc")"
    "$CXX" "${FLAGS[@]}" -c "$cc" -o "$obj"
    objs+=("$obj")
  done
  rm -f "$library"
  ar rcs "$library" "${objs[@]}"
fi
for test in "$here"/*_test.cc; do
  name="$(basename "$test" .cc)"
  exe="$build/$name"
  if [[ ! -f "$exe" || "$library" -nt "$exe" || "$test" -nt "$exe" ]]; then
    echo "compile $name.cc"
    "$CXX" "${FLAGS[@]}" "$test" "$library" -ldl -o "$exe"
  fi
  echo "== $name"
  "$exe" || status=1
done
exit "$status"
