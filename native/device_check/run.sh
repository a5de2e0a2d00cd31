#!/usr/bin/env bash
# Runs the device check on this machine's GPU (what native/device_check/build.sh put beside this
# script). Needs only the GPU's driver: where the machine has no Vulkan loader, the one carried in
# lib/ is used, and where the NVIDIA driver is installed without its Vulkan manifest (containers
# started without the `graphics` capability), a manifest naming its library is written.
#
#   bash run.sh                  # tiny plans (correctness) and full-size ones (speed)
#   bash run.sh --sizes tiny     # the tiny plans alone, in a minute even on a CPU's software Vulkan
#   bash run.sh --device 1       # another device than the first discrete GPU
#
# The full-size checkpoints (6.7 GB each, one at a time) are written under $TMPDIR and removed after.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libraries="$(ldconfig -p 2>/dev/null || true)"  # read whole: a reader that stops early would fail the pipe under pipefail
if ! grep -q 'libvulkan\.so\.1 ' <<<"$libraries"; then
  echo "no Vulkan loader installed: using the one carried in $here/lib"
  export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
manifests=(/usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json)
if [[ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]] && ! ls "${manifests[@]}" >/dev/null 2>&1; then
  nvidia="$(awk '/libGLX_nvidia\.so\.0 .*x86-64/ { print $NF }' <<<"$libraries" | head -n 1)"
  if [[ -n "$nvidia" ]]; then
    echo "no Vulkan driver manifest installed: writing one for $nvidia"
    printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' "$nvidia" >"$work/nvidia_icd.json"
    export VK_DRIVER_FILES="$work/nvidia_icd.json" VK_ICD_FILENAMES="$work/nvidia_icd.json"
  else
    echo "no Vulkan driver found: neither a manifest under /usr/share/vulkan/icd.d or /etc/vulkan/icd.d nor libGLX_nvidia.so.0."
    echo "In a container, the NVIDIA runtime mounts the Vulkan driver only when NVIDIA_DRIVER_CAPABILITIES includes graphics."
  fi
fi
"$here/device-check" --plans "$here/plans" --work "$work" "$@"
