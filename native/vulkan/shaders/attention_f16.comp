#version 450
// attention.glsl over a half KV cache (kv_store_f16.comp's packed pairs).
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#include "attention.glsl"
