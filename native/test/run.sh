#!/usr/bin/env bash
# Builds every native/common/*.cc and native/cpu/*.cc but the N-API faces (addon*.cc, cpu_model.cc) into native/test/build/libnative.a (kernels_<isa>.cc
# with their binding.gyp ISA flags; objects rebuilt only when a source or header changed), links
# each native/test/*_test.cc against it as its own program, runs them all, fails if any fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native="$here/.."
build="$here/build"
mkdir -p "$build/obj"

CXX="${CXX:-g++}"
CXXFLAGS=(-std=c++17 -O3 -fno-math-errno -Wall -Wextra -pthread -I"$native")
TEST_FLAGS=(-std=c++17 -O2 -Wall -Wextra -pthread -I"$native")

isa_flags() {
  case "$1" in
    kernels_avx2 | quant_avx2) echo "-mavx2 -mfma -mf16c" ;;
    kernels_avx512 | quant_avx512) echo "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma" ;;
    quant_avx512vnni) echo "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mavx512vnni" ;;
    kernels_avx512bf16) echo "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mavx512bf16" ;;
    *) echo "" ;;
  esac
}

# The newest header: any header change rebuilds every object.
newest_header="$(ls -t "$native"/common/*.h "$native"/cpu/*.h | head -n 1)"

# kernels_<isa>.o may define nothing global but kernels_<isa>(): an inline or template copy built
# with its ISA flags could otherwise be picked by the linker for code that runs on any CPU. -O0
# emits every such copy, so the check also builds the file at -O0.
check_exports() {
  local name="$1" flags="$2" probe="$build/obj/$1.O0.o" extra
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -O0 -w -I"$native" $flags -c "$native/cpu/$name.cc" -o "$probe"
  extra="$(nm --defined-only -C "$build/obj/$name.o" "$probe" | awk '$2 ~ /^[TWu]$/' |
    grep -v "scriptorium::$name()" || true)"
  rm -f "$probe"
  if [[ -n "$extra" ]]; then
    echo "$name.cc defines more than $name():"
    echo "$extra"
    exit 1
  fi
}

objs=()
changed=0
for cc in "$native"/common/*.cc "$native"/cpu/*.cc; do
  name="$(basename "$cc" .cc)"
  [[ "$name" == addon* || "$name" == cpu_model ]] && continue  # N-API code, built only into the addon
  obj="$build/obj/$name.o"
  flags="$(isa_flags "$name")"
  if [[ ! -f "$obj" || "$cc" -nt "$obj" || "$newest_header" -nt "$obj" ]]; then
    echo "compile $name.cc"
    # shellcheck disable=SC2086
    "$CXX" "${CXXFLAGS[@]}" $flags -c "$cc" -o "$obj"
    [[ -n "$flags" ]] && check_exports "$name" "$flags"
    changed=1
  fi
  objs+=("$obj")
done

if [[ $changed == 1 || ! -f "$build/libnative.a" ]]; then
  rm -f "$build/libnative.a"
  ar rcs "$build/libnative.a" "${objs[@]}"
fi

failed=()
for test_cc in "$here"/*_test.cc; do
  name="$(basename "$test_cc" .cc)"
  exe="$build/$name"
  if [[ ! -f "$exe" || "$test_cc" -nt "$exe" || "$build/libnative.a" -nt "$exe" ]]; then
    echo "compile $name.cc"
    "$CXX" "${TEST_FLAGS[@]}" "$test_cc" "$build/libnative.a" -o "$exe"
  fi
  echo "== $name"
  if ! "$exe"; then failed+=("$name"); fi
done

if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all native tests passed"
