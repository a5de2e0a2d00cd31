#version 450
// attention.glsl over an F32 KV cache.
#extension GL_GOOGLE_include_directive : require
#include "attention.glsl"
