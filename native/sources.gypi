# Every native source file, listed once: binding.gyp includes this file and the native test scripts
# (native/test/run.sh, native/vulkan/test/run.sh) read it, so a file added here is built and tested
# everywhere. Paths are relative to the repository root. A plain Python literal: keep it one.
{
  'variables': {
    # The shared core: what both backends use (dims, KV slot rules, safetensors, the thread pool).
    'common_sources': [
      'native/common/json.cc',
      'native/common/safetensors.cc',
      'native/common/thread_pool.cc',
      'native/common/decoder_dims.cc',
      'native/common/forward_entry.cc',
      'native/common/vision_dims.cc',
      'native/common/interpolate.cc',
    ],
    # The N-API faces both backends' models share, and the addon's module entry.
    'common_napi_sources': [
      'native/common/addon_forward.cc',
      'native/common/addon_vision.cc',
      'native/addon.cc',
    ],
    # The CPU backend, built for any x86-64 or arm64 CPU (the scalar kernel set included).
    'cpu_sources': [
      'native/cpu/kernels_scalar.cc',
      'native/cpu/kernels_dispatch.cc',
      'native/cpu/ops.cc',
      'native/cpu/packed_weights_file.cc',
      'native/cpu/attention.cc',
      'native/cpu/cpu_decoder.cc',
      'native/cpu/quant_int8.cc',
      'native/cpu/quant_scalar.cc',
      'native/cpu/cpu_vision_ops.cc',
      'native/cpu/cpu_vision_sam.cc',
      'native/cpu/cpu_vision_clip.cc',
      'native/cpu/cpu_vision_qwen2.cc',
      'native/cpu/cpu_vision_encoder.cc',
      'native/cpu/compute_turns.cc',
    ],
    'cpu_napi_sources': ['native/cpu/cpu_model.cc'],
    # Flags for every file of an architecture's build (arch_<arch>_flags). GCC fuses a * b + c into
    # one FMA wherever it likes on arm64 (never on x86-64 without -mfma), so two instantiations of
    # one scalar kernel could round differently; the scalar set is the bitwise reference, so arm64
    # rounds each operation as written (the NEON sets call their FMAs explicitly).
    'arch_x64_flags': [],
    'arch_arm64_flags': ['-ffp-contract=off'],
    # The CPU's vector kernel sets of each architecture (kernels_<arch>_sets, arch as node-gyp's
    # target_arch names it): set <set> is kernels_<set>_sources, each built with its instruction set's
    # flags (kernels_<set>_flags) into its own static library, and only for its architecture; the
    # dispatcher calls a set only on a CPU that has it.
    'kernels_x64_sets': ['avx2', 'avx512', 'avx512vnni', 'avx512bf16'],
    'kernels_arm64_sets': ['neon', 'neonbf16', 'neondot'],
    'kernels_avx2_sources': ['native/cpu/kernels_avx2.cc', 'native/cpu/quant_avx2.cc'],
    'kernels_avx2_flags': ['-mavx2', '-mfma', '-mf16c'],
    'kernels_avx512_sources': ['native/cpu/kernels_avx512.cc', 'native/cpu/quant_avx512.cc'],
    'kernels_avx512_flags': ['-mavx512f', '-mavx512bw', '-mavx512vl', '-mavx512dq', '-mfma'],
    'kernels_avx512vnni_sources': ['native/cpu/quant_avx512vnni.cc'],
    'kernels_avx512vnni_flags': ['-mavx512f', '-mavx512bw', '-mavx512vl', '-mavx512dq', '-mfma', '-mavx512vnni'],
    'kernels_avx512bf16_sources': ['native/cpu/kernels_avx512bf16.cc'],
    'kernels_avx512bf16_flags': ['-mavx512f', '-mavx512bw', '-mavx512vl', '-mavx512dq', '-mfma', '-mavx512bf16'],
    # NEON (Advanced SIMD) is part of every arm64 CPU: no flags.
    'kernels_neon_sources': ['native/cpu/kernels_neon.cc', 'native/cpu/quant_neon.cc'],
    'kernels_neon_flags': [],
    # BF16 dot products (BFDOT, FEAT_BF16): Armv8.6 cores and some earlier ones (Neoverse V1).
    'kernels_neonbf16_sources': ['native/cpu/kernels_neonbf16.cc'],
    'kernels_neonbf16_flags': ['-march=armv8.2-a+bf16'],
    # 8-bit dot products (SDOT, FEAT_DotProd) for the int8 experts and head.
    'kernels_neondot_sources': ['native/cpu/quant_neondot.cc'],
    'kernels_neondot_flags': ['-march=armv8.2-a+dotprod'],
    # The Vulkan backend (built when native/vulkan/detect.sh finds nothing missing): the device layer
    # the probes use too, then the models.
    'vulkan_device_sources': [
      'native/vulkan/instance.cc',
      'native/vulkan/device.cc',
      'native/vulkan/buffers.cc',
      'native/vulkan/pipelines.cc',
      'native/vulkan/shader_ops.cc',
    ],
    'vulkan_model_sources': [
      'native/vulkan/gpu_vision_ops.cc',
      'native/vulkan/gpu_vision_layers.cc',
      'native/vulkan/gpu_vision_sam.cc',
      'native/vulkan/gpu_vision_clip.cc',
      'native/vulkan/gpu_vision_qwen2.cc',
      'native/vulkan/gpu_vision_encoder.cc',
      'native/vulkan/weights.cc',
      'native/vulkan/gpu_decoder.cc',
    ],
    'vulkan_napi_sources': ['native/vulkan/gpu_model.cc', 'native/vulkan/vulkan_backend.cc'],
    # Built instead of the Vulkan backend when detect.sh names something missing.
    'no_vulkan_sources': ['native/vulkan/no_vulkan_backend.cc'],
    # The measurement addon (scriptorium_probes): its own files over the CPU backend and the device layer.
    'probes_sources': [
      'native/probes/probes_addon.cc',
      'native/probes/ceilings.cc',
      'native/probes/expert_products.cc',
    ],
    'probes_vulkan_sources': ['native/probes/gpu_ceilings.cc'],
  },
}
