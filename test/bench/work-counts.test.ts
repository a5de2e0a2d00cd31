// The benchmark's work counts on dimensions small enough to count by hand (bench/engine/work-counts.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  clipFlops,
  decodeRunBytes,
  decodeWeightBytes,
  expectedDistinctExperts,
  KV_ELEMENT_BYTES,
  kvReadBytes,
  prefillFlops,
  qwen2Flops,
  samFlops,
  samOutputGrid,
  visibleSlots,
} from '../../bench/engine/work-counts.js';
import { pageTileGrid } from '../../src/engine/image-preprocess.js';
import type { ClipDims, Qwen2Dims, SamDims } from '../../src/engine/vision-config.js';
import { PAGE_CASES } from '../../bench/engine/page-cases.js';
import { SMALL_DECODER } from '../support/small-decoder.js';

const SAM: SamDims = {
  width: 8,
  layers: 2,
  heads: 2,
  patchSize: 16,
  windowSize: 2,
  mlpDim: 16,
  posGrid: 4,
  globalBlocks: [1],
  neckChannels: 4,
  net2Channels: 6,
  net3Channels: 8,
  normEps: 1e-6,
};


describe('encoder FLOPs', () => {
  test('SAM output grid: 16-px patches halved twice (8, 10, 12, 16, 20 tokens per side)', () => {
    const real = { ...SAM, patchSize: 16 };
    assert.deepEqual([512, 640, 768, 1024, 1280].map((side) => samOutputGrid(real, side)), [8, 10, 12, 16, 20]);
  });

  test('SAM on one 48-px view: windowed attention runs on the padded grid, projections on the real tokens, global on the whole grid', () => {
    // g = 3 tokens per side, 9 tokens. Block 0: 2×2 windows over the grid padded to 4×4 (16 rows);
    // block 1: global over 3×3. net_2 output 2×2, net_3 output 1×1.
    const bf16 =
      2 * 9 * 8 * 3 * 256 + // patch embedding
      (2 * 9 * 8 * 24 + 2 * 9 * 8 * 8) + // block 0 qkv + proj on the 9 real tokens (padded rows are the bias)
      (2 * 9 * 8 * 24 + 2 * 9 * 8 * 8) + // block 1 qkv + proj on 9 rows
      2 * (2 * 2 * 9 * 8 * 16) + // both MLPs on the 9 real tokens
      2 * 9 * 4 * 8 + // neck.0
      2 * 9 * 4 * 4 * 9 + // neck.2
      2 * 4 * 6 * 4 * 9 + // net_2
      2 * 1 * 8 * 6 * 9; // net_3
    const f32 =
      4 * 16 * 4 * 8 + // block 0: each padded row against the 4 keys of its window
      4 * 16 * 2 * 8 + // block 0 relative positions: 2 rows of rel_h and of rel_w
      4 * 9 * 9 * 8 + // block 1: each row against all 9 keys
      4 * 9 * 3 * 8; // block 1 relative positions: 3 rows each
    assert.deepEqual(samFlops(SAM, 48, 1), { bf16, f32 });
    assert.deepEqual(samFlops(SAM, 48, 3), { bf16: 3 * bf16, f32: 3 * f32 });
  });

  test('CLIP adds a CLS row to every view', () => {
    const clip: ClipDims = { width: 4, layers: 2, heads: 2, mlpDim: 8, posGrid: 2, normEps: 1e-5 };
    // 2 views of 4 tokens: 5 rows each, 10 in all.
    const perLayer = { bf16: 2 * 10 * 4 * 12 + 2 * 10 * 4 * 4 + 2 * 2 * 10 * 4 * 8, f32: 4 * 2 * 5 * 5 * 4 };
    assert.deepEqual(clipFlops(clip, 4, 2), { bf16: 2 * perLayer.bf16, f32: 2 * perLayer.f32 });
  });

  test('Qwen2 encoder: visual rows see the visual rows, query i also queries 0..i', () => {
    const qwen2: Qwen2Dims = { dim: 4, layers: 1, heads: 2, kvHeads: 1, mlpDim: 8, rmsEps: 1e-6, ropeTheta: 1e6, querySides: [32] };
    // 2 visual rows + 2 queries; kv width 2. Keys seen: 2 + 2 (visual) + 3 + 4 (queries) = 11.
    const bf16 = 2 * 4 * 4 * 4 * 2 + 2 * 2 * 4 * 4 * 2 + 3 * 2 * 4 * 4 * 8;
    assert.deepEqual(qwen2Flops(qwen2, 2, 1), { bf16, f32: 4 * 11 * 4 });
  });
});

describe('decoder prefill FLOPs', () => {
  test('3 new tokens: causal attention, dense layer 0, top-2 + shared experts in layer 1, one lm_head row', () => {
    const attention = 2 * 3 * 4 * (4 + 2 + 2 + 4); // q, k, v, o per layer
    const scores = 4 * (1 + 2 + 3) * 4; // keys seen by the 3 queries, 4 query channels
    const dense = 3 * 2 * 3 * 4 * 6;
    const experts = 3 * 2 * 3 * 4 * 3 * (2 + 1);
    const router = 2 * 3 * 4 * 4;
    assert.deepEqual(prefillFlops(SMALL_DECODER, 3), {
      bf16: 2 * attention + dense + experts + 2 * 4 * 10,
      f32: 2 * scores + router,
    });
  });

  test('tokens after a cached prefix attend to it too', () => {
    const one = prefillFlops(SMALL_DECODER, 1, 5);
    assert.equal(one.f32, 2 * 4 * 6 * 4 + 2 * 1 * 4 * 4);
  });
});

describe('decode bytes', () => {
  test('the expected distinct experts of two tokens equal the average over every choice they can make', () => {
    // 4 experts, each token picks 2: the 6 pairs, every combination of two tokens.
    const pairs = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]];
    let union = 0;
    for (const a of pairs) for (const b of pairs) union += new Set([...a, ...b]).size;
    assert.equal(expectedDistinctExperts(4, 2, 2), union / 36);
    assert.equal(expectedDistinctExperts(64, 6, 1), 6);
  });

  test('weights read per step: attention, norms, dense FFN, router, selected and shared experts, lm_head', () => {
    const attention = (2 * 4 * 4 + 2 * 4 * 2 + 2 * 4) * 2; // q, o; k, v; two norms; BF16
    const dense = 3 * 4 * 6 * 2;
    const router = 4 * 4 * 4; // F32
    const expert = 3 * 4 * 3 * 2;
    assert.equal(decodeWeightBytes(SMALL_DECODER, 1), 2 * attention + dense + router + (2 + 1) * expert + (4 + 10 * 4 + 4) * 2);
    // Two tokens select 3 distinct experts on average (see the enumeration above).
    assert.equal(decodeWeightBytes(SMALL_DECODER, 2), 2 * attention + dense + router + (3 + 1) * expert + (4 + 10 * 4 + 2 * 4) * 2);
  });

  test('int8 experts and lm_head read 1 + 4/64 bytes per weight; a measured expert count replaces the expectation', () => {
    const attention = (2 * 4 * 4 + 2 * 4 * 2 + 2 * 4) * 2;
    const dense = 3 * 4 * 6 * 2;
    const router = 4 * 4 * 4;
    const int8Expert = 3 * 4 * 3 * (1 + 4 / 64);
    assert.equal(
      decodeWeightBytes(SMALL_DECODER, 2, { quantize: 'int8', distinctExperts: 2.5 }),
      2 * attention + dense + router + (2.5 + 1) * int8Expert + (4 + 2 * 4) * 2 + 10 * 4 * (1 + 4 / 64),
    );
  });

  test('R-SWA sees the prefix and the latest window of generated tokens; full attention sees everything', () => {
    const rswa = { ...SMALL_DECODER, slidingWindow: 3 };
    assert.deepEqual([4, 5, 7, 9, 20].map((pos) => visibleSlots(rswa, 5, pos)), [5, 6, 8, 8, 8]);
    assert.deepEqual([4, 5, 7, 9, 20].map((pos) => visibleSlots(SMALL_DECODER, 5, pos)), [5, 6, 8, 10, 21]);
    assert.equal(kvReadBytes(rswa, 5, 9), 2 * 8 * 2 * 2 * 4); // layers × slots × (K, V) × kv width × F32
    assert.equal(kvReadBytes(rswa, 5, 9, KV_ELEMENT_BYTES.f16), 2 * 8 * 2 * 2 * 2); // the half cache
  });

  test('a decode run feeds its first token at the prefix length and grows the cache by one per step', () => {
    const kv = (slots: number) => 2 * slots * 2 * 2 * 4;
    assert.equal(decodeRunBytes(SMALL_DECODER, 1, 5, 2), 2 * decodeWeightBytes(SMALL_DECODER, 1) + kv(6) + kv(7));
    assert.equal(decodeRunBytes(SMALL_DECODER, 3, 5, 1), decodeWeightBytes(SMALL_DECODER, 3) + 3 * kv(6));
  });
});

describe('page cases', () => {
  test('every case page size gives the tile count its case states', () => {
    for (const spec of PAGE_CASES) {
      const [columns, rows] = pageTileGrid(spec.pageSize[0], spec.pageSize[1], spec.variant, spec.mode);
      assert.equal(columns * rows === 1 ? 0 : columns * rows, spec.tiles, spec.id);
    }
  });
});
