// The throughput part's figures from recorded steps small enough to check by hand
// (bench/engine/throughput-report.ts), and its options.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseBenchArgs } from '../../bench/engine/bench-options.js';
import type { ThroughputAnswer, ThroughputStep } from '../../bench/engine/measure-jobs.js';
import type { MachineCeilings } from '../../bench/engine/native-probes.js';
import { decodeRoofline, summariseThroughput, throughputText } from '../../bench/engine/throughput-report.js';
import { decodeWeightBytes, KV_ELEMENT_BYTES, kvReadBytes, prefillFlops } from '../../bench/engine/work-counts.js';
import { SMALL_DECODER } from '../support/small-decoder.js';


const CEILINGS: MachineCeilings = {
  kernels: 'avx512bf16',
  threads: 2,
  readSimd: 'avx512',
  readGBps: 50,
  gemmF32Gflops: 100,
  gemmBf16Gflops: 200,
  gemmBf16FastGflops: 400,
  peakF32Gflops: 0,
  peakBf16Gflops: 0,
  clockGhz: 0,
};

/** A decode step of `decodeRows` rows, every place decoding, unless `rest` says otherwise. */
const step = (at: number, ms: number, decodeRows: number, rest: Partial<ThroughputStep> = {}): ThroughputStep => ({
  at,
  ms,
  computeMs: ms,
  places: decodeRows,
  decodeRows,
  prefillTokens: 0,
  generated: decodeRows,
  expertPasses: 3,
  ...rest,
});

/**
 * Batch 2, prompts of 10 tokens, 4 tokens a page: both pages join in the first call (100 ms), three
 * plain 10 ms steps, one step during an encode (10 ms on the engine, 30 ms of wall time: it waited
 * for a slice of the encode), then one page left decoding alone.
 */
const ANSWER: ThroughputAnswer = {
  caseId: 'v1-base',
  variant: 'v1',
  quantize: 'none',
  precision: 'fast',
  batch: 2,
  pages: 3,
  tokens: 4,
  promptTokens: 10,
  decoder: SMALL_DECODER,
  kvCache: 'f16',
  wallMs: 360,
  steps: [
    step(0, 100, 0, { places: 2, prefillTokens: 20, generated: 2, expertPasses: 4 }),
    step(100, 10, 2),
    step(110, 10, 2),
    step(120, 30, 2, { computeMs: 10, expertPasses: 4 }),
    step(150, 10, 2),
    step(160, 10, 1, { expertPasses: 2 }),
  ],
  encodes: [
    [0, 0],
    [125, 140],
  ],
  peakRssBytes: 2 ** 30,
};

describe('summariseThroughput', () => {
  const summary = summariseThroughput(ANSWER, CEILINGS, 0.05);

  test('pages per hour and tokens per second over the whole run', () => {
    assert.equal(summary.seconds, 0.36);
    assert.equal(summary.pagesPerHour, (3 * 3600) / 0.36);
    assert.equal(summary.tokensPerSecond, (3 * 4) / 0.36);
  });

  test('the full window runs from the first to the last step with every place taken, and counts the tokens made in it', () => {
    // 160 ms, from the joining call to the end of the last full step: 2 first tokens + 4 steps × 2 rows.
    assert.equal(summary.full!.seconds, 0.16);
    assert.equal(summary.full!.tokensPerSecond, 10 / 0.16);
    assert.equal(summary.full!.pagesPerHour, ((10 / 0.16) * 3600) / 4);
  });

  test('the decode step is the median engine time of full steps with no prefill and no encode beside them', () => {
    assert.equal(summary.full!.decodeStepMs, 10);
    assert.equal(summary.full!.distinctExperts, 3);
  });

  test('join cost: the share of the full batch’s rate (2 rows per 10 ms) the window lost', () => {
    assert.ok(Math.abs(summary.full!.joinCost - (1 - 10 / 160 / 0.2)) < 1e-12);
  });

  test('join slowdown: rows per ms in the steps that carry a prefill or overlap an encode, against the full rate', () => {
    assert.ok(Math.abs(summary.full!.joinSlowdown - (1 - 2 / 130 / 0.2)) < 1e-12);
  });

  test('join time per page: the window’s time beyond its tokens at the full rate, over the encodes that ended in it', () => {
    // 160 ms for 10 tokens at 0.2 tokens/ms: 110 ms over the one encode that ended after 0 (at 140).
    assert.ok(Math.abs(summary.full!.joinMsPerPage! - 110) < 1e-12);
    // A page's 4 tokens at the full rate take 20 ms.
    assert.ok(Math.abs(summary.full!.streamJoinShare! - 110 / 130) < 1e-12);
    // Queued before the window (a page taken early), ended in it: it counts.
    assert.ok(Math.abs(summariseThroughput({ ...ANSWER, encodes: [[-500, 130], [-400, 150]] }, CEILINGS).full!.joinMsPerPage! - 55) < 1e-12);
  });

  test('no encode ended while the batch was full: no join time per page', () => {
    const full = summariseThroughput({ ...ANSWER, encodes: [[-50, 0]] }, CEILINGS).full!;
    assert.equal(full.joinMsPerPage, undefined);
    assert.equal(full.streamJoinShare, undefined);
  });

  test('cost per million pages: cores × price per core-hour × hours a million pages take at the full rate', () => {
    assert.ok(Math.abs(summary.usdPerMillionPages! - (1e6 / summary.full!.pagesPerHour) * 2 * 0.05) < 1e-9);
    assert.equal(summariseThroughput(ANSWER, CEILINGS).usdPerMillionPages, undefined);
  });

  test('a run whose batch never filled has no full-batch figures, and its cost uses the whole run', () => {
    const short = summariseThroughput({ ...ANSWER, batch: 4 }, CEILINGS, 0.05);
    assert.equal(short.full, undefined);
    assert.ok(Math.abs(short.usdPerMillionPages! - (1e6 / short.pagesPerHour) * 2 * 0.05) < 1e-9);
  });
});

describe('decodeRoofline', () => {
  test('bytes: weights with the measured distinct experts plus every cache at the mean length; FLOPs at the precision’s GEMM ceiling', () => {
    const roofline = decodeRoofline(ANSWER, 3, 10, CEILINGS);
    const meanLength = 10 + 4 / 2;
    const bytes = decodeWeightBytes(SMALL_DECODER, 2, { quantize: 'none', distinctExperts: 3 }) + 2 * kvReadBytes(SMALL_DECODER, 10, meanLength, KV_ELEMENT_BYTES.f16);
    const flops = prefillFlops(SMALL_DECODER, 1, meanLength);
    assert.equal(roofline.bytesPerStep, bytes);
    assert.equal(roofline.bandwidthMs, bytes / 50e6);
    assert.equal(roofline.computeMs, 2 * (flops.bf16 / 400e6 + flops.f32 / 100e6));
    assert.equal(roofline.share, Math.max(roofline.bandwidthMs, roofline.computeMs) / 10);
    const exact = decodeRoofline({ ...ANSWER, precision: 'exact' }, 3, 10, CEILINGS);
    assert.equal(exact.computeMs, 2 * (flops.bf16 / 200e6 + flops.f32 / 100e6));
  });
});

describe('the throughput table', () => {
  test('one table per case and weights, with a row per batch size and the cost column when priced', () => {
    const text = throughputText([summariseThroughput(ANSWER, CEILINGS, 0.05), summariseThroughput({ ...ANSWER, quantize: 'int8' }, CEILINGS, 0.05)], CEILINGS);
    assert.match(text, /^v1-base, fast precision, BF16 experts, 4 tokens per page$/m);
    assert.match(text, /^v1-base, fast precision, int8 experts, 4 tokens per page$/m);
    assert.match(text, /\$\/M pages/);
    assert.equal(text.split('\n').filter((line) => /^ {4}2 {6}3 /.test(line)).length, 2);
  });
});

describe('throughput options', () => {
  test('a real page’s 1,000 tokens, batches 8 to 64, both weight formats and v1-base unless told otherwise', () => {
    const options = parseBenchArgs([], {});
    if (options === 'help') throw new Error('help');
    assert.equal(options.parts.has('throughput'), true);
    assert.deepEqual(
      { ...options.throughput, cases: options.throughput.cases.map((c) => c.id) },
      { cases: ['v1-base'], batches: [8, 16, 32, 64], tokens: 1000, pages: undefined, quantize: ['none', 'int8'], coreHourUsd: undefined },
    );
  });

  test('each setting can be given', () => {
    const options = parseBenchArgs(
      ['--only', 'throughput', '--throughput-cases', 'v3-base', '--throughput-batches', '16,32', '--throughput-tokens', '500', '--throughput-pages', '40', '--throughput-quantize', 'int8', '--core-hour-usd', '0.03'],
      {},
    );
    if (options === 'help') throw new Error('help');
    assert.deepEqual(
      { ...options.throughput, cases: options.throughput.cases.map((c) => c.id) },
      { cases: ['v3-base'], batches: [16, 32], tokens: 500, pages: 40, quantize: ['int8'], coreHourUsd: 0.03 },
    );
  });

  test('multi-page prompts are not among its cases', () => {
    assert.throws(() => parseBenchArgs(['--throughput-cases', 'v3-10pages'], {}), /--throughput-cases/);
  });
});
