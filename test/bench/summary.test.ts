// Medians and ceiling ratios of the benchmark (bench/engine/stats.ts, bench/engine/summary.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { PageAnswer } from '../../bench/engine/measure-jobs.js';
import { median, medianSeries } from '../../bench/engine/stats.js';
import { bandwidthEfficiency, computeEfficiency, summariseBatch, summariseLatency, summarisePage } from '../../bench/engine/summary.js';
import type { MachineCeilings } from '../../bench/engine/native-probes.js';

const CEILINGS: MachineCeilings = {
  kernels: 'avx512bf16',
  threads: 2,
  readSimd: 'avx512',
  readGBps: 20,
  gemmF32Gflops: 50,
  gemmBf16Gflops: 100,
  gemmBf16FastGflops: 180,
  peakF32Gflops: 60,
  peakBf16Gflops: 120,
  clockGhz: 3,
};

describe('median', () => {
  test('the middle value of an odd count, in any order', () => {
    assert.equal(median([9, 1, 5]), 5);
  });

  test('the mean of the two middle values of an even count', () => {
    assert.equal(median([4, 1, 3, 100]), 3.5);
  });

  test('no values is an error', () => {
    assert.throws(() => median([]), /no values/);
  });

  test('element-wise over series', () => {
    assert.deepEqual(medianSeries([[1, 9, 3], [3, 2, 1], [2, 5, 8]]), [2, 5, 3]);
    assert.throws(() => medianSeries([[1], [1, 2]]), /unequal lengths/);
  });
});

describe('ratios to the ceilings', () => {
  test('compute: BF16-weight FLOPs at the gemm_bf16 peak plus activation FLOPs at the gemm_f32 peak, over the time taken', () => {
    // 2 GFLOP at 100 GFLOP/s + 1 GFLOP at 50 GFLOP/s = 40 ms of ceiling time, done in 80 ms.
    assert.equal(computeEfficiency({ bf16: 2e9, f32: 1e9 }, 80, CEILINGS), 0.5);
  });

  test('bandwidth: bytes at the read bandwidth over the time taken', () => {
    assert.equal(bandwidthEfficiency(1e9, 200, 20), 0.25);
  });

  test('a page: decode speed counts the steps after the prefill, not the token the prefill produced', () => {
    const answer: PageAnswer = {
      caseId: 'v1-base',
      views: [{ side: 1024, count: 1 }],
      promptTokens: 300,
      imageTokens: 273,
      decodeTokens: 11,
      work: {
        sam: { bf16: 4e9, f32: 0 },
        encoder: { bf16: 1e9, f32: 0 },
        projector: { bf16: 1e8, f32: 0 },
        calls: [{ sam: { bf16: 4e9, f32: 0 }, encoder: { bf16: 1e9, f32: 0 } }],
        prefill: { bf16: 3e9, f32: 0 },
        decodeBytes: 10e9,
      },
      encode: [
        { sam: 100, encoder: 30, projector: 2, calls: [{ sam: 100, encoder: 30, projector: 2 }], total: 140 },
        { sam: 80, encoder: 20, projector: 1, calls: [{ sam: 80, encoder: 20, projector: 1 }], total: 110 },
        { sam: 90, encoder: 10, projector: 3, calls: [{ sam: 90, encoder: 10, projector: 3 }], total: 120 },
      ],
      prefillMs: [60, 50, 70],
      decodeMs: [1000, 3000, 2000],
      peakRssBytes: 7e9,
      weightBytes: 6.7e9,
    };
    const summary = summarisePage(answer, CEILINGS);
    assert.equal(summary.runs, 3);
    const sam = summary.encode!.sam;
    assert.equal(sam.ms, 90);
    assert.ok(Math.abs(sam.gflops - 4 / 0.09) < 1e-9, `${sam.gflops} GFLOP/s`);
    assert.ok(Math.abs(sam.efficiency - 0.04 / 0.09) < 1e-12, `${sam.efficiency}`); // 40 ms at the ceiling
    assert.equal(summary.encode!.totalMs, 120);
    assert.deepEqual(summary.encode!.calls.map((c) => [c.count, c.side, c.sam.ms, c.encoder.ms]), [[1, 1024, 90, 20]]);
    assert.equal(summary.prefill!.tokensPerSecond, 300 / 0.06);
    assert.equal(summary.decode!.tokensPerSecond, 10 / 2);
    assert.equal(summary.decode!.efficiency, 10e9 / 20e9 / 2);
  });

  test('batched decode: tokens are batch × steps, the ceiling is the batch at one step per bytes-at-bandwidth', () => {
    const summary = summariseBatch(
      {
        variant: 'v1',
        quantize: 'none',
        prefixTokens: 256,
        steps: 10,
        rows: [{ batch: 4, ms: [500, 400, 600], distinctExperts: 3.5, bytes: 20e9, peakRssBytes: 7 }],
        peakRssBytes: 9,
      },
      CEILINGS,
    );
    assert.deepEqual(summary.rows[0], {
      batch: 4,
      distinctExperts: 3.5,
      peakRssBytes: 7,
      msPerStep: 50,
      tokensPerSecond: 40 / 0.5,
      bytesPerStep: 2e9,
      efficiency: 1 / 0.5,
      ceilingTokensPerSecond: 4 / 0.1,
    });
  });

  test('latency: per-step medians over runs, and each reported length the median of the 32 steps up to it', () => {
    const steps = 40;
    const run = (offset: number) => Array.from({ length: steps }, (_, i) => i + offset);
    const summary = summariseLatency(
      { variant: 'v3', prefixTokens: 100, prefillMs: [5, 7, 6], stepMs: [run(0), run(2), run(1)], stepBytes: Array(steps).fill(2e7), peakRssBytes: 1 },
      CEILINGS,
    );
    assert.deepEqual(summary.stepMs, run(1));
    assert.equal(summary.prefillMs, 6);
    assert.deepEqual(
      summary.points.map((p) => [p.generated, p.ms, p.ceilingMs]),
      [
        [1, 1, 1], // step 0 alone
        [40, median(run(1).slice(8, 40)), 1], // steps 8..39
      ],
    );
  });
});
