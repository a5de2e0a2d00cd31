#!/usr/bin/env bash
# For whoever has a GPU: builds everything, runs the Vulkan backend's tests on it, then a short GPU
# bench (the device's ceilings; V1 and V3 base pages: prefill and decode; batched decode up to 64
# sequences), all as ratios to the device's measured ceilings. Under 8 minutes on a data-centre GPU
# once the full-size checkpoints exist (writing them takes about a minute more on first use).
#
#   bash bench/engine/gpu-check.sh                # the first discrete GPU (--device auto)
#   DEVICE=gpu:1 bash bench/engine/gpu-check.sh   # another device; extra arguments go to the bench
#
# The tests run on gpu:0: where several Vulkan drivers are installed (a GPU and Mesa's llvmpipe),
# VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json (say) leaves the loader only the GPU's.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SCRIPTORIUM_REQUIRE_VULKAN=1
device="${DEVICE:-auto}"

npm run build:native
npm run build
node dist/src/cli/main.js devices
bash native/vulkan/test/run.sh
for test in dist/test/native/gpu-*.test.js dist/test/native/device-*.test.js; do
  node --test --test-concurrency=1 "$test"
done
node dist/bench/engine/main.js --device "$device" --quick --only decode,batch --cases v1-base,v3-base "$@"
