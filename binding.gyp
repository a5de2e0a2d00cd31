{
  "variables": {
    "vulkan_missing": "<!(bash native/vulkan/detect.sh)"
  },
  "target_defaults": {
    "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
    "cflags!": ["-fno-exceptions"],
    "include_dirs": ["native"],
    "defines": ["NAPI_CPP_EXCEPTIONS", "NAPI_VERSION=8"]
  },
  "targets": [
    {
      "target_name": "kernels_avx2",
      "type": "static_library",
      "sources": ["native/cpu/kernels_avx2.cc", "native/cpu/quant_avx2.cc"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c"]
    },
    {
      "target_name": "kernels_avx512",
      "type": "static_library",
      "sources": ["native/cpu/kernels_avx512.cc", "native/cpu/quant_avx512.cc"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma"]
    },
    {
      "target_name": "kernels_avx512vnni",
      "type": "static_library",
      "sources": ["native/cpu/quant_avx512vnni.cc"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-mavx512vnni"]
    },
    {
      "target_name": "kernels_avx512bf16",
      "type": "static_library",
      "sources": ["native/cpu/kernels_avx512bf16.cc"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-mavx512bf16"]
    },
    {
      "target_name": "scriptorium_native",
      "dependencies": ["kernels_avx2", "kernels_avx512", "kernels_avx512vnni", "kernels_avx512bf16"],
      "sources": [
        "native/addon.cc",
        "native/cpu/cpu_model.cc",
        "native/common/json.cc",
        "native/common/safetensors.cc",
        "native/common/thread_pool.cc",
        "native/common/decoder_dims.cc",
        "native/common/forward_entry.cc",
        "native/common/vision_dims.cc",
        "native/common/interpolate.cc",
        "native/cpu/kernels_scalar.cc",
        "native/cpu/kernels_dispatch.cc",
        "native/cpu/ops.cc",
        "native/cpu/attention.cc",
        "native/cpu/cpu_decoder.cc",
        "native/cpu/quant_int8.cc",
        "native/cpu/quant_scalar.cc",
        "native/common/addon_forward.cc",
        "native/common/addon_vision.cc",
        "native/cpu/cpu_vision_ops.cc",
        "native/cpu/cpu_vision_sam.cc",
        "native/cpu/cpu_vision_clip.cc",
        "native/cpu/cpu_vision_qwen2.cc",
        "native/cpu/cpu_vision_encoder.cc"
      ],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["vulkan_missing==''", {
          "sources": [
            "native/vulkan/instance.cc",
            "native/vulkan/device.cc",
            "native/vulkan/buffers.cc",
            "native/vulkan/pipelines.cc",
            "native/vulkan/shader_ops.cc",
            "native/vulkan/gpu_vision_ops.cc",
            "native/vulkan/gpu_vision_layers.cc",
            "native/vulkan/gpu_vision_sam.cc",
            "native/vulkan/gpu_vision_clip.cc",
            "native/vulkan/gpu_vision_qwen2.cc",
            "native/vulkan/gpu_vision_encoder.cc",
            "native/vulkan/weights.cc",
            "native/vulkan/gpu_decoder.cc",
            "native/vulkan/gpu_model.cc",
            "native/vulkan/vulkan_backend.cc"
          ],
          "include_dirs": ["<(SHARED_INTERMEDIATE_DIR)"],
          "cflags_cc": ["-Wno-missing-field-initializers"],
          "libraries": ["-ldl"],
          "actions": [{
            "action_name": "embed_vulkan_shaders",
            "inputs": ["native/vulkan/embed-shaders.py", "<!@(ls native/vulkan/shaders/*)"],
            "outputs": ["<(SHARED_INTERMEDIATE_DIR)/vulkan_shaders.h"],
            "action": ["python3", "native/vulkan/embed-shaders.py", "<(SHARED_INTERMEDIATE_DIR)/vulkan_shaders.h",
                       "<!@(ls native/vulkan/shaders/*.comp)"]
          }]
        }, {
          "sources": ["native/vulkan/no_vulkan_backend.cc"],
          "defines": ["SCRIPTORIUM_VULKAN_MISSING=\"<(vulkan_missing)\""]
        }]
      ]
    },
    {
      "target_name": "scriptorium_probes",
      "dependencies": ["kernels_avx2", "kernels_avx512", "kernels_avx512vnni", "kernels_avx512bf16"],
      "sources": [
        "native/probes/probes_addon.cc",
        "native/probes/ceilings.cc",
        "native/probes/int8_products.cc",
        "native/cpu/ops.cc",
        "native/common/thread_pool.cc",
        "native/cpu/kernels_scalar.cc",
        "native/cpu/kernels_dispatch.cc",
        "native/cpu/quant_int8.cc",
        "native/cpu/quant_scalar.cc"
      ],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["vulkan_missing==''", {
          "sources": [
            "native/probes/gpu_ceilings.cc",
            "native/vulkan/instance.cc",
            "native/vulkan/device.cc",
            "native/vulkan/buffers.cc",
            "native/vulkan/pipelines.cc",
            "native/vulkan/shader_ops.cc"
          ],
          "include_dirs": ["<(SHARED_INTERMEDIATE_DIR)/probes"],
          "cflags_cc": ["-Wno-missing-field-initializers"],
          "defines": ["SCRIPTORIUM_PROBES_VULKAN"],
          "libraries": ["-ldl"],
          "actions": [{
            "action_name": "embed_probe_shaders",
            "inputs": ["native/vulkan/embed-shaders.py", "<!@(ls native/vulkan/shaders/*)", "<!@(ls native/probes/shaders/*)"],
            "outputs": ["<(SHARED_INTERMEDIATE_DIR)/probes/vulkan_shaders.h", "<(SHARED_INTERMEDIATE_DIR)/probes/gpu_probe_shaders.h"],
            "action": ["bash", "-c", "python3 native/vulkan/embed-shaders.py <(SHARED_INTERMEDIATE_DIR)/probes/vulkan_shaders.h native/vulkan/shaders/*.comp && python3 native/vulkan/embed-shaders.py <(SHARED_INTERMEDIATE_DIR)/probes/gpu_probe_shaders.h native/probes/shaders/*.comp"]
          }]
        }]
      ]
    }
  ]
}
