#!/usr/bin/env bash
# Builds the shared core and the CPU backend (native/sources.gypi: common_sources, cpu_sources and,
# for each set of the target architecture's kernels_<arch>_sets, kernels_<set>_sources with its
# kernels_<set>_flags; not the N-API faces) into native/test/build/libnative.a (objects rebuilt only
# when a source or header changed), links each native/test/*_test.cc against it as its own program,
# runs them all, fails if any fails; and builds decoder_across_arch.cc, which run-decoder-across-arch.sh runs.
# The target architecture is the compiler's (CXX, default g++; AR and NM name its archiver and
# symbol lister). NATIVE_TEST_BUILD moves the build folder, and NATIVE_TEST_RUNNER prefixes each
# program's command line (an emulator): native/test/run-aarch64.sh uses all three.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native="$here/.."
build="${NATIVE_TEST_BUILD:-$here/build}"
mkdir -p "$build/obj"

CXX="${CXX:-g++}"
AR="${AR:-ar}"
NM="${NM:-nm}"
read -r -a runner <<<"${NATIVE_TEST_RUNNER:-}"
# The architecture as node-gyp's target_arch names it, which picks the kernel sets.
target="$("$CXX" -dumpmachine)"
case "$target" in
  x86_64-*) arch=x64 ;;
  aarch64-* | arm64-*) arch=arm64 ;;
  *) echo "no kernel sets for the compiler's target $target"; exit 1 ;;
esac
echo "target $target ($arch)"
read -r -a arch_flags <<<"$(python3 -c 'import ast, sys; print(" ".join(ast.literal_eval(open(sys.argv[1]).read())["variables"]["arch_" + sys.argv[2] + "_flags"]))' "$native/sources.gypi" "$arch")"
CXXFLAGS=(-std=c++17 -O3 -fno-math-errno -Wall -Wextra -pthread -I"$native" "${arch_flags[@]}")
TEST_FLAGS=(-std=c++17 -O2 -Wall -Wextra -pthread -I"$native" "${arch_flags[@]}")

# One line per source: its path from the repository root, a tab, its instruction-set flags.
sources_with_flags() {
  python3 - "$native/sources.gypi" "$arch" <<'PY'
import ast, sys
v = ast.literal_eval(open(sys.argv[1]).read())["variables"]
for path in v["common_sources"] + v["cpu_sources"]:
    print(path + "\t")
for kernel_set in v["kernels_" + sys.argv[2] + "_sets"]:
    for path in v["kernels_" + kernel_set + "_sources"]:
        print(path + "\t" + " ".join(v["kernels_" + kernel_set + "_flags"]))
PY
}

# The newest header: any header change rebuilds every object.
newest_header="$(ls -t "$native"/common/*.h "$native"/cpu/*.h | head -n 1)"

# kernels_<isa>.o may define nothing global but kernels_<isa>(): an inline or template copy built
# with its ISA flags could otherwise be picked by the linker for code that runs on any CPU. -O0
# emits every such copy, so the check also builds the file at -O0.
check_exports() {
  local cc="$1" name="$2" flags="$3" probe="$build/obj/$2.O0.o" extra
  # shellcheck disable=SC2086
  "$CXX" -std=c++17 -O0 -w -I"$native" $flags -c "$cc" -o "$probe"
  extra="$("$NM" --defined-only -C "$build/obj/$name.o" "$probe" | awk '$2 ~ /^[TWu]$/' |
    grep -v "scriptorium::$name()" || true)"
  rm -f "$probe"
  if [[ -n "$extra" ]]; then
    echo "$name.cc defines more than $name():"
    echo "$extra"
    exit 1
  fi
}

sources="$(sources_with_flags)"
objs=()
changed=0
while IFS=$'\t' read -r path flags; do
  cc="$native/../$path"
  name="$(basename "$cc" .cc)"
  obj="$build/obj/$name.o"
  if [[ ! -f "$obj" || "$cc" -nt "$obj" || "$newest_header" -nt "$obj" ]]; then
    echo "compile $name.cc"
    # shellcheck disable=SC2086
    "$CXX" "${CXXFLAGS[@]}" $flags -c "$cc" -o "$obj"
    [[ -n "$flags" ]] && check_exports "$cc" "$name" "$flags"
    changed=1
  fi
  objs+=("$obj")
done <<<"$sources"

if [[ $changed == 1 || ! -f "$build/libnative.a" ]]; then
  rm -f "$build/libnative.a"
  "$AR" rcs "$build/libnative.a" "${objs[@]}"
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
  if ! "${runner[@]}" "$exe"; then failed+=("$name"); fi
done

# Not a test: the program native/test/run-decoder-across-arch.sh runs on each architecture.
across="$build/decoder_across_arch"
if [[ ! -f "$across" || "$here/decoder_across_arch.cc" -nt "$across" || "$build/libnative.a" -nt "$across" ]]; then
  echo "compile decoder_across_arch.cc"
  "$CXX" "${TEST_FLAGS[@]}" "$here/decoder_across_arch.cc" "$build/libnative.a" -o "$across"
fi

if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all native tests passed"
