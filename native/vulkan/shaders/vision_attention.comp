#version 450
// vision_attention.glsl for any head_dim up to 128.
#extension GL_GOOGLE_include_directive : require
#define HEAD_DIM 0
#include "vision_attention.glsl"
