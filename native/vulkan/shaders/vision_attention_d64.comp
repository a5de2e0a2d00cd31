#version 450
// vision_attention.glsl for head_dim 64.
#extension GL_GOOGLE_include_directive : require
#define HEAD_DIM 64
#include "vision_attention.glsl"
