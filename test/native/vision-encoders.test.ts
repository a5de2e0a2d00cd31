// The vision dimensions handed to the native engine, then the native vision encoders on the tiny
// checkpoints: token counts per view side, rejected sides, determinism, batching, intermediate
// layouts, the assembly vectors and a free event loop. Numerical agreement with the float64
// reference lives in the vision-vs-reference tests.
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { before, describe, test } from 'node:test';

import { NativeModel } from '../../src/engine/native-model.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { parseModelConfig } from '../../src/engine/model-config.js';
import { modelConfig } from '../../src/model/synth/model-configs.js';
import { parseVisionDims } from '../../src/engine/vision-config.js';
import { SafetensorsCheckpoint } from '../reference/safetensors-reader.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const HIDDEN = 256; // tiny decoder hidden size = projector n_embed
const ENCODER_WIDTH = 128; // tiny CLIP width = tiny Qwen2 dim = tiny net_3 channels

/** n views of side² pixels per channel, deterministic values in [-1, 1): pixels[n, 3, side, side]. */
function views(n: number, side: number, seed = 1): Float32Array {
  const pixels = new Float32Array(n * 3 * side * side);
  let state = seed;
  for (let i = 0; i < pixels.length; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    pixels[i] = (state / 2147483648) * 2 - 1;
  }
  return pixels;
}

function sameValues(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function maxRelativeError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  return worst;
}

/** parseVisionDims of a (possibly edited) synthetic config.json. */
function visionDimsOf(variant: Variant, size: 'tiny' | 'full', edit: (config: any) => void = () => {}) {
  const config = modelConfig(variant, size) as any;
  edit(config);
  return parseVisionDims(parseModelConfig(config));
}

describe('vision dims from config.json', () => {
  test('full V1: SAM ViT-B with the code defaults, net_3 = CLIP width 1024, CLIP-L with a 16x16 position grid', () => {
    const dims = visionDimsOf('v1', 'full');
    assert.equal(dims?.kind, 'deepencoder');
    assert.deepEqual(dims?.sam, {
      width: 768, layers: 12, heads: 12, patchSize: 16, windowSize: 14, mlpDim: 3072, posGrid: 64,
      globalBlocks: [2, 5, 8, 11], neckChannels: 256, net2Channels: 512, net3Channels: 1024, normEps: 1e-6,
    });
    assert.deepEqual(dims?.clip, { width: 1024, layers: 24, heads: 16, mlpDim: 4096, posGrid: 16, normEps: 1e-5 });
    assert.equal(dims?.qwen2, undefined);
    assert.deepEqual([dims?.projectorInput, dims?.embed], [2048, 1280]);
  });

  test('full V2: net_3 = Qwen2 dim 896 although downsample_channels lists 1024; Qwen2 code defaults', () => {
    const dims = visionDimsOf('v2', 'full');
    assert.equal(dims?.kind, 'deepencoderv2');
    assert.equal(dims?.sam.net3Channels, 896);
    assert.deepEqual(dims?.qwen2, {
      dim: 896, layers: 24, heads: 14, kvHeads: 2, mlpDim: 4864, rmsEps: 1e-6, ropeTheta: 1e6, querySides: [768, 1024],
    });
    assert.equal(dims?.clip, undefined);
    assert.deepEqual([dims?.projectorInput, dims?.embed], [896, 1280]);
  });

  test('tiny configs state the dimensions the full ones leave to code', () => {
    const dims = visionDimsOf('v2', 'tiny');
    assert.deepEqual([dims?.sam.width, dims?.sam.mlpDim, dims?.sam.neckChannels, dims?.sam.net3Channels], [96, 384, 32, 128]);
    assert.deepEqual([dims?.qwen2?.layers, dims?.qwen2?.heads, dims?.qwen2?.kvHeads, dims?.qwen2?.mlpDim], [2, 4, 2, 256]);
  });

  test('a config.json without vision_config (decoder-only checkpoint) has no vision dims', () => {
    assert.equal(visionDimsOf('v1', 'tiny', (c) => delete c.vision_config), null);
  });

  test('inconsistent widths are rejected by name', () => {
    assert.throws(() => visionDimsOf('v1', 'full', (c) => (c.projector_config.input_dim = 1024)), /projector_config\.input_dim 1024 must be CLIP width \+ net_3 width = 2048/);
    assert.throws(() => visionDimsOf('v1', 'full', (c) => (c.vision_config.width.sam_vit_b.downsample_channels = [512, 896])), /downsample_channels\[1\] 896 must equal the CLIP width 1024/);
    assert.throws(() => visionDimsOf('v2', 'full', (c) => (c.projector_config.n_embed = 1024)), /n_embed 1024 differs from hidden_size 1280/);
    assert.throws(() => visionDimsOf('v1', 'full', (c) => delete c.vision_config.width['clip-l-14-224']), /vision_config\.width\.clip-l-14-224 must be an object/);
  });
});

const models = new Map<Variant, NativeModel>();
const dirs = new Map<Variant, string>();

function model(variant: Variant): NativeModel {
  const m = models.get(variant);
  assert.ok(m, `${variant} not loaded`);
  return m;
}

describe('native vision encoder', () => {
  before(async () => {
    for (const variant of ['v1', 'v2', 'v3'] as const) {
      const dir = await tinyCheckpoint(variant);
      dirs.set(variant, dir);
      models.set(variant, await NativeModel.load(dir));
    }
  });

  test('V1 turns 1024, 640, 512 and 1280-pixel views into 256, 100, 64 and 400 tokens of the hidden width', async () => {
    for (const [side, tokens] of [[1024, 256], [640, 100], [512, 64], [1280, 400]]) {
      const out = await model('v1').encodeImages(views(1, side), 1, side);
      assert.equal(out.tokensPerView, tokens, `side ${side}`);
      assert.equal(out.projected.length, tokens * HIDDEN, `side ${side}`);
      assert.ok(out.projected.every(Number.isFinite), `side ${side}: non-finite outputs`);
    }
  });

  test('V2 turns 768 and 1024-pixel views into 144 and 256 tokens', async () => {
    for (const [side, tokens] of [[768, 144], [1024, 256]]) {
      const out = await model('v2').encodeImages(views(1, side), 1, side);
      assert.equal(out.tokensPerView, tokens, `side ${side}`);
      assert.equal(out.projected.length, tokens * HIDDEN, `side ${side}`);
    }
  });

  test('V2 rejects every other side with an error naming 768 and 1024', async () => {
    for (const side of [512, 640, 1280]) {
      await assert.rejects(model('v2').encodeImages(views(1, side), 1, side), /encodes only 768 or 1024-pixel views/);
    }
  });

  test('V3 turns 1024 and 640-pixel views into 256 and 100 tokens', async () => {
    for (const [side, tokens] of [[1024, 256], [640, 100]]) {
      const out = await model('v3').encodeImages(views(1, side), 1, side);
      assert.equal(out.tokensPerView, tokens, `side ${side}`);
      assert.equal(out.projected.length, tokens * HIDDEN, `side ${side}`);
    }
  });

  test('a side that is not a multiple of the 16-pixel patch is rejected', async () => {
    await assert.rejects(model('v1').encodeImages(views(1, 1000), 1, 1000), /positive multiple of 16 pixels/);
  });

  test('pixels that are not n · 3 · side² floats are rejected', async () => {
    await assert.rejects(model('v1').encodeImages(views(1, 512), 2, 512), /pixels must hold n \* 3 \* side \* side = 1572864 floats/);
  });

  test('encoding the same view twice gives identical outputs', async () => {
    const a = await model('v1').encodeImages(views(1, 640), 1, 640);
    const b = await model('v1').encodeImages(views(1, 640), 1, 640);
    assert.ok(sameValues(a.projected, b.projected));
  });

  test('a batch of two identical views gives two identical outputs', async () => {
    const one = views(1, 640);
    const pair = new Float32Array(2 * one.length);
    pair.set(one);
    pair.set(one, one.length);
    const out = await model('v1').encodeImages(pair, 2, 640);
    const half = out.projected.length / 2;
    assert.ok(sameValues(out.projected.subarray(0, half), out.projected.subarray(half)));
  });

  test('a batch of two views equals two single-view runs (V1 and V2)', async () => {
    for (const [variant, side] of [['v1', 512], ['v2', 768]] as const) {
      const a = views(1, side, 1);
      const b = views(1, side, 2);
      const pair = new Float32Array(2 * a.length);
      pair.set(a);
      pair.set(b, a.length);
      const batched = await model(variant).encodeImages(pair, 2, side);
      const single = [await model(variant).encodeImages(a, 1, side), await model(variant).encodeImages(b, 1, side)];
      const half = batched.projected.length / 2;
      assert.ok(sameValues(batched.projected.subarray(0, half), single[0].projected), `${variant}: first view`);
      assert.ok(sameValues(batched.projected.subarray(half), single[1].projected), `${variant}: second view`);
    }
  });

  test('intermediates come only when asked, SAM as [n, C, h, w] and the encoder as [n, tokens, width]', async () => {
    const plain = await model('v1').encodeImages(views(2, 640), 2, 640);
    assert.equal(plain.sam, undefined);
    assert.equal(plain.encoder, undefined);
    const v1 = await model('v1').encodeImages(views(2, 640), 2, 640, true);
    assert.deepEqual(v1.samShape, [2, ENCODER_WIDTH, 10, 10]);
    assert.equal(v1.sam?.length, 2 * ENCODER_WIDTH * 100);
    assert.equal(v1.encoder?.length, 2 * 100 * ENCODER_WIDTH);
    const v2 = await model('v2').encodeImages(views(1, 768), 1, 768, true);
    assert.deepEqual(v2.samShape, [1, ENCODER_WIDTH, 12, 12]);
    assert.equal(v2.encoder?.length, 144 * ENCODER_WIDTH);
  });

  // The projector reads, per token t, [encoder[t] ; SAM[:, t]]: recomputing it from the intermediates
  // in their official layouts must give the projected output.
  test('projected = projector([CLIP[t] ; SAM[:, t]]) (V1) and projector(Qwen2[t]) (V2) from the intermediates', async () => {
    for (const [variant, side] of [['v1', 512], ['v2', 768]] as const) {
      const out = await model(variant).encodeImages(views(1, side), 1, side, true);
      const checkpoint = SafetensorsCheckpoint.open(dirs.get(variant)!);
      const weight = checkpoint.tensor('model.projector.layers.weight').data;
      const bias = checkpoint.tensor('model.projector.layers.bias').data;
      const tokens = out.tokensPerView;
      const sam = out.sam!;
      const encoder = out.encoder!;
      const inputs = variant === 'v1' ? 2 * ENCODER_WIDTH : ENCODER_WIDTH;
      const want = new Float64Array(tokens * HIDDEN);
      for (let t = 0; t < tokens; t++) {
        const feature = new Float64Array(inputs);
        for (let c = 0; c < ENCODER_WIDTH; c++) feature[c] = encoder[t * ENCODER_WIDTH + c];
        if (variant === 'v1') for (let c = 0; c < ENCODER_WIDTH; c++) feature[ENCODER_WIDTH + c] = sam[c * tokens + t];
        for (let o = 0; o < HIDDEN; o++) {
          let acc = bias[o];
          for (let k = 0; k < inputs; k++) acc += weight[o * inputs + k] * feature[k];
          want[t * HIDDEN + o] = acc;
        }
      }
      const error = maxRelativeError(out.projected, want);
      assert.ok(error < 1e-4, `${variant}: max relative error ${error}`);
    }
  });

  test('specialVector returns image_newline and view_seperator as stored; V2 has no image_newline', () => {
    for (const variant of ['v1', 'v2'] as const) {
      const checkpoint = SafetensorsCheckpoint.open(dirs.get(variant)!);
      const names = variant === 'v1' ? (['image_newline', 'view_seperator'] as const) : (['view_seperator'] as const);
      for (const name of names) {
        assert.ok(sameValues(model(variant).specialVector(name), checkpoint.tensor(`model.${name}`).data), `${variant} ${name}`);
      }
    }
    assert.throws(() => model('v2').specialVector('image_newline'), /no image_newline/);
  });

  test('encodeImages returns a Promise and event-loop delay stays under 50 ms while it runs', async () => {
    const pixels = views(2, 1280);
    const monitor = monitorEventLoopDelay({ resolution: 10 });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    monitor.enable();
    const started = performance.now();
    const pending = model('v1').encodeImages(pixels, 2, 1280);
    assert.ok(pending instanceof Promise);
    await pending;
    const elapsed = performance.now() - started;
    monitor.disable();
    clearInterval(ticker);
    const maxDelayMs = monitor.max / 1e6;
    assert.ok(elapsed > 200, `the encode took ${elapsed.toFixed(0)} ms; too short to show anything`);
    assert.ok(maxDelayMs < 50, `event-loop delay reached ${maxDelayMs.toFixed(1)} ms`);
    assert.ok(ticks > elapsed / 20, `only ${ticks} timer ticks in ${elapsed.toFixed(0)} ms`);
  });
});
