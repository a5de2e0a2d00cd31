#version 450
// out[o_off + v * o_view + r * ldo + c] = x[x_off + v * x_view + r * ldx + c] for views v, rows r and
// columns c < width: blocks of rows moved between layouts (x_view = 0 repeats one block in every view).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer OutBuf { float O[]; };
layout(push_constant) uniform Params {
  uint total, rows, width, x_off, x_view, ldx, o_off, o_view, ldo;
} p;

void main() {
  const uint step = gl_NumWorkGroups.x * 256;
  for (uint e = gl_GlobalInvocationID.x; e < p.total; e += step) {
    const uint c = e % p.width, r = e / p.width % p.rows, v = e / (p.width * p.rows);
    O[p.o_off + v * p.o_view + r * p.ldo + c] = X[p.x_off + v * p.x_view + r * p.ldx + c];
  }
}
