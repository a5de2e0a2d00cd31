{
  "includes": ["native/sources.gypi"],
  "variables": {
    "vulkan_missing": "<!(bash native/vulkan/detect.sh)"
  },
  "target_defaults": {
    "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
    "cflags!": ["-fno-exceptions"],
    "include_dirs": ["native"],
    "defines": ["NAPI_CPP_EXCEPTIONS", "NAPI_VERSION=8"],
    "xcode_settings": {
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "OTHER_CPLUSPLUSFLAGS": ["-O3", "-fno-math-errno"]
    },
    "conditions": [
      ["target_arch=='x64'", {
        "cflags_cc": ["<@(arch_x64_flags)"],
        "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(arch_x64_flags)"]}
      }],
      ["target_arch=='arm64'", {
        "cflags_cc": ["<@(arch_arm64_flags)"],
        "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(arch_arm64_flags)"]}
      }]
    ]
  },
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "kernels_avx2",
          "type": "static_library",
          "sources": ["<@(kernels_avx2_sources)"],
          "cflags_cc": ["<@(kernels_avx2_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_avx2_flags)"]}
        },
        {
          "target_name": "kernels_avx512",
          "type": "static_library",
          "sources": ["<@(kernels_avx512_sources)"],
          "cflags_cc": ["<@(kernels_avx512_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_avx512_flags)"]}
        },
        {
          "target_name": "kernels_avx512vnni",
          "type": "static_library",
          "sources": ["<@(kernels_avx512vnni_sources)"],
          "cflags_cc": ["<@(kernels_avx512vnni_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_avx512vnni_flags)"]}
        },
        {
          "target_name": "kernels_avx512bf16",
          "type": "static_library",
          "sources": ["<@(kernels_avx512bf16_sources)"],
          "cflags_cc": ["<@(kernels_avx512bf16_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_avx512bf16_flags)"]}
        }
      ]
    }],
    ["target_arch=='arm64'", {
      "targets": [
        {
          "target_name": "kernels_neon",
          "type": "static_library",
          "sources": ["<@(kernels_neon_sources)"],
          "cflags_cc": ["<@(kernels_neon_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_neon_flags)"]}
        },
        {
          "target_name": "kernels_neonbf16",
          "type": "static_library",
          "sources": ["<@(kernels_neonbf16_sources)"],
          "cflags_cc": ["<@(kernels_neonbf16_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_neonbf16_flags)"]}
        },
        {
          "target_name": "kernels_neondot",
          "type": "static_library",
          "sources": ["<@(kernels_neondot_sources)"],
          "cflags_cc": ["<@(kernels_neondot_flags)"],
          "xcode_settings": {"OTHER_CPLUSPLUSFLAGS": ["<@(kernels_neondot_flags)"]}
        }
      ]
    }]
  ],
  "targets": [
    {
      "target_name": "scriptorium_cpu",
      "type": "static_library",
      "sources": ["<@(common_sources)", "<@(cpu_sources)"],
      "conditions": [
        ["target_arch=='x64'", {"dependencies": ["kernels_avx2", "kernels_avx512", "kernels_avx512vnni", "kernels_avx512bf16"]}],
        ["target_arch=='arm64'", {"dependencies": ["kernels_neon", "kernels_neonbf16", "kernels_neondot"]}]
      ]
    },
    {
      "target_name": "scriptorium_native",
      "dependencies": ["scriptorium_cpu"],
      "sources": ["<@(common_napi_sources)", "<@(cpu_napi_sources)"],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["vulkan_missing==''", {
          "sources": ["<@(vulkan_device_sources)", "<@(vulkan_model_sources)", "<@(vulkan_napi_sources)"],
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
          "sources": ["<@(no_vulkan_sources)"],
          "defines": ["SCRIPTORIUM_VULKAN_MISSING=\"<(vulkan_missing)\""]
        }]
      ]
    },
    {
      "target_name": "scriptorium_probes",
      "dependencies": ["scriptorium_cpu"],
      "sources": ["<@(probes_sources)"],
      "include_dirs": ["<!@(node -p \"require('node-addon-api').include\")"],
      "libraries": ["-lpthread"],
      "conditions": [
        ["vulkan_missing==''", {
          "sources": ["<@(probes_vulkan_sources)", "<@(vulkan_device_sources)"],
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
