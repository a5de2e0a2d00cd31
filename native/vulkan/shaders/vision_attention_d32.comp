#version 450
// vision_attention.glsl for head_dim 32.
#extension GL_GOOGLE_include_directive : require
#define HEAD_DIM 32
#include "vision_attention.glsl"
