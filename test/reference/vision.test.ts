// Self-tests of the vision reference (test/reference/vision-*.ts): interpolation, relative-position bias, window
// partitioning, the Qwen2 encoder mask and the assembly counts of docs/model.md §6.3 against hand-computed values, and
// whole tiny encodes. None of this needs the native engine.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { SafetensorsCheckpoint } from './safetensors-reader.js';
import { assembleV1V3, assembleV2, assembleV3Pages } from './vision-assembly.js';
import { readVisionConfig } from './vision-config.js';
import {
  bicubicAntialiasTaps,
  cubicKernel,
  linearTaps,
  resizeBicubicAntialias,
  resizeLinear,
} from './vision-interpolate.js';
import { erf, gelu, layerNorm } from './vision-math.js';
import { loadQwen2, qwen2CanAttend, qwen2Forward } from './vision-qwen2.js';
import { ReferenceVision } from './vision-reference.js';
import {
  relativePositionRows,
  relativePositionTerms,
  windowPartition,
  windowUnpartition,
} from './vision-sam.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-15): void {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance, `[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

/** A deterministic pseudo-random vector in [−1, 1): → [n]. */
function noise(n: number, seed: number): Float64Array {
  let state = seed;
  return Float64Array.from({ length: n }, () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return (state / 2147483648) * 2 - 1;
  });
}

describe('vision math', () => {
  test('erf matches tabulated values and GELU uses it', () => {
    const table: [number, number][] = [
      [0, 0],
      [0.5, 0.5204998778130465],
      [1, 0.8427007929497149],
      [-1.5, -0.9661051464753108],
      [2, 0.9953222650189527],
      [3.5, 0.9999992569016276],
    ];
    assertClose(
      table.map(([x]) => erf(x)),
      table.map(([, y]) => y),
      1e-15,
    );
    assertClose([gelu(1), gelu(-1)], [0.8413447460685429, -0.15865525393145707], 1e-15);
  });

  test('layerNorm uses the biased variance, then the affine weight and bias', () => {
    // mean 2, variance 1
    assertClose(layerNorm(Float64Array.of(1, 3), Float32Array.of(1, 2), Float32Array.of(0, 1), 0), [-1, 3]);
  });
});

describe('interpolation (F.interpolate semantics, align_corners false)', () => {
  test('the Keys cubic kernel with a = −0.5', () => {
    assertClose([0, 0.5, 1, 1.5, 2, -0.5].map(cubicKernel), [1, 0.5625, 0, -0.0625, 0, 0.5625]);
  });

  test('bicubic antialias is the identity when the sizes match', () => {
    const grid = noise(5 * 7 * 3, 1);
    assert.deepEqual(resizeBicubicAntialias(grid, 5, 7, 3, 5, 7), grid);
  });

  test('bicubic antialias downscale 4 → 2: kernel widened ×2, taps normalised', () => {
    // output 0: center 1, support 4; inputs 0…3 at kernel arguments (j + 0.5 − 1)/2 = −0.25, 0.25, 0.75, 1.25
    const raw = [0.8671875, 0.8671875, 0.2265625, -0.0703125];
    const taps = bicubicAntialiasTaps(4, 2);
    assert.equal(taps[0].first, 0);
    assertClose(taps[0].weights, raw.map((w) => w / 1.890625));
    assertClose(taps[1].weights, [...raw].reverse().map((w) => w / 1.890625));
  });

  test('bicubic antialias downscale 5 → 3: a non-integer factor, the edge tap dropped', () => {
    // output 0: center 5/6, support 10/3; inputs 0…3 at (j − 1/3)·0.6 = −0.2, 0.4, 1.0, 1.6
    const taps = bicubicAntialiasTaps(5, 3);
    assert.equal(taps[0].first, 0);
    assertClose(taps[0].weights, [0.912 / 1.56, 0.696 / 1.56, 0, -0.048 / 1.56], 1e-15);
  });

  test('bicubic antialias keeps a constant grid constant, downscaling and upscaling', () => {
    for (const [from, to] of [
      [64, 40],
      [64, 48],
      [16, 10],
      [16, 20],
      [64, 80],
    ]) {
      const constant = new Float64Array(from * from * 2).fill(0.75);
      const resized = resizeBicubicAntialias(constant, from, from, 2, to, to);
      assertClose(resized, new Float64Array(to * to * 2).fill(0.75), 1e-14);
    }
  });

  test('bicubic antialias maps a linear ramp onto the sample positions (i + 0.5)·s − 0.5 in the interior', () => {
    const ramp = (taps: ReturnType<typeof bicubicAntialiasTaps>) =>
      taps.map((t) => t.weights.reduce((sum, w, k) => sum + w * (t.first + k), 0));
    const interior = (from: number, to: number) => {
      const s = from / to;
      const support = 2 * Math.max(s, 1);
      const inside = (i: number) => (i + 0.5) * s - support >= 0 && (i + 0.5) * s + support <= from;
      return Array.from({ length: to }, (_, i) => i).filter(inside);
    };
    // exact for integer downscale factors (symmetric taps) and for every upscale (Keys reproduces linear functions)
    for (const [from, to] of [
      [64, 32],
      [64, 16],
      [16, 20],
      [64, 80],
    ]) {
      const values = ramp(bicubicAntialiasTaps(from, to));
      for (const i of interior(from, to)) {
        assert.ok(Math.abs(values[i] - ((i + 0.5) * (from / to) - 0.5)) < 1e-13, `${from}→${to} [${i}]`);
      }
    }
    // for non-integer downscale factors the widened kernel sampled off-centre only approximately keeps a ramp linear
    const values = ramp(bicubicAntialiasTaps(64, 40));
    for (const i of interior(64, 40)) assert.ok(Math.abs(values[i] - ((i + 0.5) * 1.6 - 0.5)) < 0.02, `64→40 [${i}]`);
  });

  test('the 2-D resize is separable: a product of ramps resizes to the product of the 1-D results', () => {
    const [from, to] = [16, 10];
    const grid = new Float64Array(from * from);
    for (let y = 0; y < from; y++) for (let x = 0; x < from; x++) grid[y * from + x] = (y + 1) * (x * x + 1);
    const resized = resizeBicubicAntialias(grid, from, from, 1, to, to);
    const rows = resize1d(from, to, (y) => y + 1);
    const cols = resize1d(from, to, (x) => x * x + 1);
    const expected = new Float64Array(to * to);
    for (let y = 0; y < to; y++) for (let x = 0; x < to; x++) expected[y * to + x] = rows[y] * cols[x];
    assertClose(resized, expected, 1e-12);
  });

  test('linear resize of rel-pos tables: src = (i + 0.5)·in/out − 0.5 clamped at 0, edge index clamped', () => {
    assertClose(resizeLinear(Float64Array.of(0, 1, 2, 3, 4), 5, 1, 3), [1 / 3, 2, 11 / 3]);
    assertClose(resizeLinear(Float64Array.of(0, 10, 20), 3, 1, 5), [0, 4, 10, 16, 20]);
    assertClose(resizeLinear(Float64Array.of(1, 2, 3, 4), 2, 2, 2), [1, 2, 3, 4]);
    assert.deepEqual(
      linearTaps(4, 4).map((t) => t.first),
      [0, 1, 2, 3],
    );
  });
});

/** f(0 … from − 1) resized by the 1-D bicubic antialias taps: → [to]. */
function resize1d(from: number, to: number, f: (i: number) => number): number[] {
  return bicubicAntialiasTaps(from, to).map((t) => t.weights.reduce((sum, w, k) => sum + w * f(t.first + k), 0));
}

describe('SAM attention pieces', () => {
  test('rel-pos rows: R[qi, ki] = table[qi − ki + S − 1], the table resized when its length is not 2S − 1', () => {
    // d = 1, S = 2: rows ↔ offsets −1, 0, +1
    assertClose(relativePositionRows(Float64Array.of(7, 8, 9), 3, 1, 2), [8, 7, 9, 8]);
    // a 5-row table for S = 2 is first resized to 3 rows: [1/3, 2, 11/3]
    assertClose(relativePositionRows(Float64Array.of(0, 1, 2, 3, 4), 5, 1, 2), [2, 1 / 3, 11 / 3, 2]);
  });

  test('decomposed rel-pos bias on a 2×2 grid, hand-computed from the unscaled q', () => {
    // d = 2; table rows ↔ offsets −1, 0, +1; q rows for (0,0), (0,1), (1,0), (1,1)
    const tableH = Float64Array.of(1, 0, 0, 1, 2, -1);
    const tableW = Float64Array.of(0, 3, 1, 1, -1, 0);
    const q = Float64Array.of(1, 2, 3, -1, 0, 1, 2, 2);
    const Rh = relativePositionRows(tableH, 3, 2, 2);
    const Rw = relativePositionRows(tableW, 3, 2, 2);
    const { relH, relW } = relativePositionTerms(q, 2, 2, Rh, Rw, 2);
    const bias: number[] = [];
    for (let n = 0; n < 4; n++) {
      for (let kh = 0; kh < 2; kh++) for (let kw = 0; kw < 2; kw++) bias.push(relH[n * 2 + kh] + relW[n * 2 + kw]);
    }
    // e.g. query (0,1) = [3, −1], key (1,0): q·tableH[0 − 1 + 1] + q·tableW[1 − 0 + 1] = 3 + (−3) = 0
    assert.deepEqual(bias, [5, 8, 4, 7, -4, 1, 0, 5, 0, 2, 2, 4, 0, 6, 0, 6]);
  });

  test('window partition pads bottom/right with zero rows and un-partition restores the grid', () => {
    const [H, W, w] = [5, 3, 2];
    const tokens = Array.from({ length: H * W }, (_, t) => Float64Array.of(t + 1, -(t + 1)));
    const windows = windowPartition(tokens, H, W, w);
    assert.equal(windows.length, 3 * 2);
    const zero = Float64Array.of(0, 0);
    // window (0, 1): grid (0,2), (0,3)pad, (1,2), (1,3)pad
    assert.deepEqual(windows[1], [tokens[2], zero, tokens[5], zero]);
    // window (2, 1): only grid (4,2) is real
    assert.deepEqual(windows[5], [tokens[14], zero, zero, zero]);
    const restored = windowUnpartition(windows, H, W, w);
    assert.equal(restored.length, H * W);
    restored.forEach((row, t) => assert.equal(row, tokens[t]));
  });
});

describe('Qwen2 encoder mask', () => {
  test('visual rows see only visual columns; query i sees the visual tokens and queries ≤ i', () => {
    const n = 3;
    const mask = Array.from({ length: 2 * n }, (_, row) =>
      Array.from({ length: 2 * n }, (_, column) => (qwen2CanAttend(n, row, column) ? 1 : 0)).join(''),
    );
    assert.deepEqual(mask, ['111000', '111000', '111000', '111100', '111110', '111111']);
  });
});

describe('assembly (§5.6) and image-token counts (§6.3)', () => {
  const width = 4;
  const specials = { imageNewline: new Float64Array(width).fill(-1), viewSeparator: new Float64Array(width).fill(-9) };
  const view = (side: number) => new Float64Array(side * side * width);
  const rowsOf = (rows: Float64Array) => rows.length / width;

  test('V1 base: 16·17 + 1 = 273', () => {
    assert.equal(rowsOf(assembleV1V3(view(16), 16, specials)), 273);
  });

  test('V1 gundam: (2,2) → 693, (3,2) → 893, (2,3) → 903', () => {
    const gundam = (i: number, j: number) => {
      const projected = Array.from({ length: i * j }, () => view(10));
      return rowsOf(assembleV1V3(view(16), 16, specials, { projected, i, j, T: 10 }));
    };
    assert.equal(gundam(2, 2), 693);
    assert.equal(gundam(3, 2), 893);
    assert.equal(gundam(2, 3), 903);
  });

  test('V2: 257 + 144·n', () => {
    const tile = new Float64Array(144 * width);
    const global = new Float64Array(256 * width);
    for (const n of [0, 2, 3, 4, 5, 6]) {
      const tiles = Array.from({ length: n }, () => tile);
      assert.equal(rowsOf(assembleV2(global, specials.viewSeparator, tiles)), 257 + 144 * n);
    }
  });

  test('V3 multi-page: 3 pages → 3·273', () => {
    assert.equal(rowsOf(assembleV3Pages([view(16), view(16), view(16)], 16, specials)), 3 * 273);
  });

  test('V1 order: big local grid rows with newlines, then the global rows with newlines, then the separator', () => {
    const one = { imageNewline: Float64Array.of(-1), viewSeparator: Float64Array.of(-9) };
    // tiles i = 2 columns, j = 1 row, T = 2; tile k holds values 4k … 4k + 3 row-major
    const tiles = { projected: [Float64Array.of(0, 1, 2, 3), Float64Array.of(4, 5, 6, 7)], i: 2, j: 1, T: 2 };
    const rows = assembleV1V3(Float64Array.of(10, 11, 12, 13), 2, one, tiles);
    assert.deepEqual([...rows], [0, 1, 4, 5, -1, 2, 3, 6, 7, -1, 10, 11, -1, 12, 13, -1, -9]);
  });

  test('V2 and V3 order', () => {
    const tiles = [Float64Array.of(1), Float64Array.of(2)];
    assert.deepEqual([...assembleV2(Float64Array.of(3), Float64Array.of(-9), tiles)], [1, 2, 3, -9]);
    const one = { imageNewline: Float64Array.of(-1), viewSeparator: Float64Array.of(-9) };
    assert.deepEqual([...assembleV3Pages([Float64Array.of(5), Float64Array.of(6)], 1, one)], [5, -1, -9, 6, -1, -9]);
  });

  test('V1/V3 assembly refuses a V2 checkpoint’s missing image_newline', () => {
    assert.throws(() => assembleV1V3(view(16), 16, { viewSeparator: specials.viewSeparator }), /image_newline/);
  });
});

describe('tiny checkpoints end to end', () => {
  let v1Dir: string;
  let v2Dir: string;
  before(async () => {
    v1Dir = await tinyCheckpoint('v1');
    v2Dir = await tinyCheckpoint('v2');
  });

  /** A smooth test image in [−1, 1]: → pixels[3, S, S]. */
  const image = (S: number) => Float32Array.from({ length: 3 * S * S }, (_, i) => Math.sin(i * 0.0137) * 0.9);

  test('V1 encodes a 640 view into 10×10 tokens: SAM [C,10,10], CLIP [100, width], projected [100, n_embed]', () => {
    const vision = ReferenceVision.load(v1Dir);
    const { encoder } = vision.config;
    assert.equal(encoder.kind, 'clip');
    const clipWidth = encoder.kind === 'clip' ? encoder.clip.width : 0;
    const started = Date.now();
    const result = vision.encode(image(640), 640);
    const seconds = (Date.now() - started) / 1000;
    assert.equal(result.grid, 10);
    assert.equal(result.sam.length, clipWidth * 100);
    assert.equal(result.encoder.length, 100 * clipWidth);
    assert.equal(result.projected.length, 100 * vision.config.embedWidth);
    assert.equal(vision.config.embedWidth, 256); // tiny n_embed = tiny decoder hidden size
    assert.ok(result.projected.every(Number.isFinite));
    assert.equal(vision.imageNewline?.length, 256);
    assert.equal(vision.viewSeparator.length, 256);
    console.log(`reference V1 640 view: ${seconds.toFixed(1)} s`);
  });

  test('V2 takes net_3’s width from the tensor, not downsample_channels, and has no image_newline', () => {
    const vision = ReferenceVision.load(v2Dir);
    assert.equal(vision.imageNewline, undefined);
    const json = JSON.parse(readFileSync(join(v2Dir, 'config.json'), 'utf8'));
    const listed = json.vision_config.width.sam_vit_b.downsample_channels[1];
    assert.notEqual(listed, vision.config.encoder.kind === 'qwen2' ? vision.config.encoder.qwen2.dim : 0);
    assert.throws(() => vision.encode(image(640), 640), /no query table/);
  });

  test('V2 encodes a 768 view into 144 query outputs', () => {
    const vision = ReferenceVision.load(v2Dir);
    const started = Date.now();
    const result = vision.encode(image(768), 768);
    const seconds = (Date.now() - started) / 1000;
    assert.equal(result.grid, 12);
    assert.equal(result.projected.length, 144 * vision.config.embedWidth);
    assert.ok(result.projected.every(Number.isFinite));
    console.log(`reference V2 768 view: ${seconds.toFixed(1)} s`);
  });

  test('V2 Qwen2 encoder: query i depends on every visual token and on queries ≤ i only', () => {
    const config = readVisionConfig(JSON.parse(readFileSync(join(v2Dir, 'config.json'), 'utf8')));
    assert.equal(config.encoder.kind, 'qwen2');
    if (config.encoder.kind !== 'qwen2') return;
    const checkpoint = SafetensorsCheckpoint.open(v2Dir);
    const tensor = (name: string) => checkpoint.tensor(name).data;
    const weights = loadQwen2(tensor, config.encoder.qwen2, { query768: 144, query1024: 256 });
    const dim = config.encoder.qwen2.dim;
    const visual = Array.from({ length: 144 }, (_, t) => noise(dim, t + 1));
    const base = qwen2Forward(weights, visual);
    assert.equal(base.length, 144);

    const queries = weights.queries.get(144)!;
    const original = queries[100 * dim];
    queries[100 * dim] = original + 1; // perturb query 100
    const perturbed = qwen2Forward(weights, visual);
    queries[100 * dim] = original;
    for (let i = 0; i < 100; i++) assert.deepEqual(perturbed[i], base[i], `query ${i} saw a later query`);
    for (let i = 100; i < 144; i++) assert.notDeepEqual(perturbed[i], base[i], `query ${i} missed query 100`);

    const moved = visual.map((row, t) => (t === 143 ? noise(dim, 999) : row));
    qwen2Forward(weights, moved).forEach((row, i) => {
      assert.notDeepEqual(row, base[i], `query ${i} missed visual token 143`);
    });
  });
});
