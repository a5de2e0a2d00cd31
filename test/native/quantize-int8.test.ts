// --quantize int8 (experts and vocabulary head in 8 bits, docs/model.md "Int8 weights") against the
// float64 reference and against the unquantised engine on tiny checkpoints, with the bound stated
// in docs/model.md: logits within 2e-2 of the largest logit; the argmax compared wherever the
// reference's top-2 gap is at least twice that (a smaller gap may flip under that error).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { DecoderDims } from '../../src/engine/model-config.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { measureExpertProducts } from '../../bench/engine/native-probes.js';
import { parseCommandLine } from '../../src/cli/command-line.js';
import { ENGINE_OPTIONS } from '../../src/cli/engine-options.js';
import { greedyReference } from '../reference/reference-generate.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { compareDecoding, describeComparison, maxAbs, maxAbsDiff, type LogitTolerances } from '../support/compare-with-reference.js';
import { PRECISION_BOUNDS } from '../support/precision-bounds.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const INT8_BOUNDS: LogitTolerances = { prefill: 2e-2, steps: 2e-2, nearTieGaps: 2 };
// Fast precision with int8 experts: the errors of fast precision's BF16 products and of the int8
// weights (with, on CPUs with integer dot products, the experts' activations in 8 bits) add, so the
// prefill's bound is the sum of the two modes' bounds. The steps are held to 2.5e-2, tighter than
// that sum, so that the argmax is still compared on most steps (docs/model.md §7.6 has the measured errors).
const FAST_INT8_BOUNDS: LogitTolerances = { prefill: PRECISION_BOUNDS.fast.logits.prefill + INT8_BOUNDS.prefill, steps: 2.5e-2, nearTieGaps: 2 };
const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];
const STEPS = 200;

/** int8 values plus one F32 scale per 64 columns (per row below 64) of every expert matrix and lm_head. */
function expectedInt8Bytes(d: DecoderDims): number {
  const matrix = (rows: number, cols: number) => rows * cols + 4 * rows * Math.ceil(cols / Math.min(cols, 64));
  const expert = (width: number) => 2 * matrix(width, d.hidden) + matrix(d.hidden, width);
  let total = matrix(d.vocab, d.hidden);
  for (let l = 0; l < d.layers; l++) {
    if (d.routedExperts === 0 || l < d.firstDenseLayers || l % d.moeLayerFreq !== 0) continue;
    total += d.routedExperts * expert(d.moeIntermediate);
    if (d.sharedExperts > 0) total += expert(d.sharedExperts * d.moeIntermediate);
  }
  return total;
}

describe('--quantize int8', () => {
  // V3 only: its decoder is V1's plus the R-SWA window (200 steps pass its 128-slot ring), and the
  // float64 reference is the expensive part of this file.
  let v3Reference: ReturnType<typeof greedyReference> | undefined;
  const referenceOf = (dir: string) => (v3Reference ??= greedyReference(ReferenceDecoder.load(dir), PROMPT, STEPS, { topk: 2 }));
  for (const precision of ['exact', 'fast'] as const) {
    const bounds = precision === 'exact' ? INT8_BOUNDS : FAST_INT8_BOUNDS;
    test(`v3, ${precision} precision: prefill logits and ${STEPS} teacher-forced steps agree with the float64 reference within the bound`, async (t) => {
      const dir = await tinyCheckpoint('v3');
      const model = await NativeModel.load(dir, { quantize: 'int8', precision });
      const comparison = await compareDecoding(model, referenceOf(dir), PROMPT, undefined, bounds);
      t.diagnostic(describeComparison(comparison));
      // The argmax must have been compared on enough steps for the test to say something.
      assert.ok(STEPS - comparison.nearTies >= 50, `only ${STEPS - comparison.nearTies} steps were unambiguous`);
    });
  }

  test('converts every expert and lm_head, and moves logits by less than the bound from the unquantised engine', async (t) => {
    const dir = await tinyCheckpoint('v1');
    const [int8, exact] = await Promise.all([NativeModel.load(dir, { quantize: 'int8' }), NativeModel.load(dir)]);
    assert.equal(int8.quantize, 'int8');
    assert.equal(int8.backend, `${exact.backend}+int8`, 'results, status and metrics name the int8 engine');
    assert.equal(int8.quantizedBytes, expectedInt8Bytes(int8.config.decoder));
    assert.equal(exact.quantizedBytes, 0);
    const prefill = async (model: NativeModel) => {
      const [out] = await model.forward([{ sequence: model.createSequence(), ids: Int32Array.from(PROMPT) }]);
      return out.logits!;
    };
    const [q, e] = await Promise.all([prefill(int8), prefill(exact)]);
    const error = maxAbsDiff(q, e) / maxAbs(e);
    t.diagnostic(`prefill logits: max abs difference ${error.toExponential(2)} of the largest logit`);
    assert.ok(error > 0, 'int8 logits equal the BF16 ones: the int8 path was not taken');
    assert.ok(error <= INT8_BOUNDS.prefill, `int8 prefill logits off by ${error} of the largest logit`);
  });

  for (const precision of ['exact', 'fast'] as const) {
    test(`a batched int8 decode step gives each sequence the logits it gets alone, ${precision} precision`, async () => {
      const model = await NativeModel.load(await tinyCheckpoint('v1'), { quantize: 'int8', precision });
      const prompts = [PROMPT, PROMPT.slice(0, 17), [0, 5, 9, 77]];
      const alone: Float32Array[] = [];
      for (const ids of prompts) {
        const [out] = await model.forward([{ sequence: model.createSequence(), ids: Int32Array.from(ids) }]);
        alone.push(out.logits!);
      }
      const together = await model.forward(prompts.map((ids) => ({ sequence: model.createSequence(), ids: Int32Array.from(ids) })));
      together.forEach((out, i) => assert.deepEqual(out.logits, alone[i], `sequence ${i}`));
    });
  }

  test('the option takes none (the default) or int8 and refuses anything else', () => {
    const quantize = (...args: string[]) => parseCommandLine(args, ENGINE_OPTIONS).options.quantize;
    assert.equal(quantize(), 'none');
    assert.equal(quantize('--quantize', 'int8'), 'int8');
    assert.equal(quantize('--quantize', 'none'), 'none');
    assert.throws(() => quantize('--quantize', 'int4'), { name: 'UsageError', message: /--quantize/ });
  });
});

describe('measureExpertProducts', () => {
  test('measures the BF16 product and each int8 kernel set (and form) the CPU has at every row count, and rejects options it cannot use', async () => {
    const speeds = await measureExpertProducts({ threads: 2, weightBytes: 4 << 20, passes: 1, batches: [1, 6, 8] });
    const bf16 = speeds.filter((s) => s.format === 'bf16');
    assert.deepEqual(bf16.map((s) => s.batch), [1, 6, 8]);
    const int8Sets = [...new Set(speeds.filter((s) => s.format === 'int8').map((s) => s.kernels))];
    assert.ok(int8Sets.length > 0 && int8Sets.every((k) => ['avx512vnni', 'avx512vnni fast', 'avx512', 'avx2'].includes(k)), int8Sets.join());
    // The VNNI set's fast form (8-bit activations) is measured beside its exact one.
    assert.equal(int8Sets.includes('avx512vnni fast'), int8Sets.includes('avx512vnni'), int8Sets.join());
    for (const k of int8Sets) assert.deepEqual(speeds.filter((s) => s.kernels === k).map((s) => s.batch), [1, 6, 8]);
    for (const s of speeds) {
      assert.ok(s.weightGBps > 0, `${s.kernels} ${s.batch}: ${s.weightGBps}`);
      // bytes and FLOPs come from one pass: per weight, 2·M FLOPs against 2 bytes (BF16), or against
      // 1 byte and its share of a 4-byte scale per 64 (int8, K 1280: 20 groups a row)
      const expected = s.format === 'bf16' ? s.batch : (2 * s.batch * 1280) / (1280 + 4 * 20);
      const flopsPerByte = s.gflops / s.weightGBps;
      assert.ok(Math.abs(flopsPerByte - expected) < 1e-6 * expected, `${s.kernels} ${s.batch}: ${flopsPerByte} against ${expected}`);
    }
    assert.throws(() => measureExpertProducts({ passes: 0 }), /passes must be an integer between 1 and 1000/);
    assert.throws(() => measureExpertProducts({ cols: 16 }), /cols must be between 64 and 65536/);
    assert.throws(() => measureExpertProducts({ batches: [0] }), /batch sizes must be integers between 1 and 256/);
  });
});
