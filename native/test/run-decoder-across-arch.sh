#!/usr/bin/env bash
# The tiny synthetic V1 and V3 decoders (V3 with R-SWA sliding) on arm64 against x86-64: decoder_across_arch (built by run.sh
# for this machine and by run-aarch64.sh for arm64) writes each mode's logits on x86-64, then
# recomputes them on arm64 under qemu-aarch64, once with `-cpu max` (the neonbf16 set) and once with
# `-cpu cortex-a72` (neon), and compares them within each mode's tolerance (decoder_across_arch.cc).
# Needs both programs and the built TypeScript (npm run build), which writes the checkpoints.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sysroot=/usr/aarch64-linux-gnu  # the cross compiler's Debian sysroot, as in run-aarch64.sh
x64="$here/build/decoder_across_arch"
arm64="$here/build-aarch64/decoder_across_arch"
for program in "$x64" "$arm64"; do
  [[ -x "$program" ]] || { echo "$program is missing: run native/test/run.sh and native/test/run-aarch64.sh first"; exit 1; }
done
[[ -f "$root/dist/src/cli/main.js" ]] || { echo "the TypeScript is not built: npm run build"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for variant in v1 v3; do
  checkpoint="$work/$variant"
  node "$root/dist/src/cli/main.js" model synth --variant "$variant" --size tiny --out "$checkpoint" >/dev/null
  # The decoder's dimensions as the engine reads them from config.json; V3's window is shortened to
  # 4 generated tokens, so that the 8 steps slide it (R-SWA) as a long page does.
  node --input-type=module -e '
    const { loadModelConfig } = await import(process.argv[1]);
    const dims = (await loadModelConfig(process.argv[2])).decoder;
    if (dims.slidingWindow > 0) dims.slidingWindow = 4;
    process.stdout.write(JSON.stringify(dims));
  ' "$root/dist/src/engine/model-config.js" "$checkpoint" >"$work/$variant.json"
  echo "=== tiny $variant on x86-64"
  "$x64" "$checkpoint" "$work/$variant.json" write "$work/$variant.logits"
  for cpu in max cortex-a72; do
    echo "=== tiny $variant on arm64 under qemu-aarch64 -cpu $cpu, against x86-64"
    qemu-aarch64 -L "$sysroot" -cpu "$cpu" "$arm64" "$checkpoint" "$work/$variant.json" compare "$work/$variant.logits"
  done
done
echo "the arm64 decoders match x86-64"
