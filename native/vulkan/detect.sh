#!/usr/bin/env bash
# Prints the Debian packages that building the Vulkan backend lacks on this machine (libvulkan-dev for
# the headers, glslc for the shader compiler), comma-separated, or nothing when both are present.
# binding.gyp builds the backend only when this prints nothing; otherwise the addon names them.
missing=()
header_found=0
for dir in ${VULKAN_SDK:+"$VULKAN_SDK/include"} /usr/include /usr/local/include; do
  [ -f "$dir/vulkan/vulkan.h" ] && header_found=1
done
[ "$header_found" = 1 ] || missing+=(libvulkan-dev)
command -v glslc >/dev/null 2>&1 || missing+=(glslc)
(IFS=,; printf '%s' "${missing[*]}")
