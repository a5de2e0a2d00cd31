// Medians of the measuring processes' runs, and every figure's ratio to its ceiling:
//   compute-bound (encoders, prefill): the time the counted FLOPs take at the measured GEMM peaks
//     (BF16-weight products at gemm_bf16's, activation products at gemm_f32's) ÷ the measured time;
//   memory-bound (decode): the time the counted bytes take at the measured read bandwidth ÷ the
//     measured time.
// 1 would mean running at the ceiling.
import type { MachineCeilings } from './native-probes.js';
import { pageCase } from './page-cases.js';
import type { BatchAnswer, LatencyAnswer, PageAnswer } from './measure-jobs.js';
import { median, medianSeries } from './stats.js';
import { totalFlops, type Flops } from './work-counts.js';

export type ComputeCeilings = Pick<MachineCeilings, 'gemmBf16Gflops' | 'gemmF32Gflops'>;

/** Fraction of the compute ceiling reached by doing `flops` in `ms`. */
export function computeEfficiency(flops: Flops, ms: number, ceilings: ComputeCeilings): number {
  const ceilingSeconds = flops.bf16 / (ceilings.gemmBf16Gflops * 1e9) + flops.f32 / (ceilings.gemmF32Gflops * 1e9);
  return ceilingSeconds / (ms / 1000);
}

/** Fraction of the memory ceiling reached by reading `bytes` in `ms`. */
export function bandwidthEfficiency(bytes: number, ms: number, readGBps: number): number {
  return bytes / (readGBps * 1e9) / (ms / 1000);
}

export interface ComputeFigure {
  /** Median over the runs. */
  ms: number;
  gflops: number;
  /** Fraction of the GEMM ceiling. */
  efficiency: number;
}

function computeFigure(flops: Flops, samples: readonly number[], ceilings: ComputeCeilings): ComputeFigure {
  const ms = median(samples);
  return { ms, gflops: totalFlops(flops) / 1e6 / ms, efficiency: computeEfficiency(flops, ms, ceilings) };
}

export interface PageSummary {
  id: string;
  variant: string;
  mode: string;
  task: string;
  pages: number;
  views: { side: number; count: number }[];
  promptTokens: number;
  imageTokens: number;
  runs: number;
  encode?: {
    sam: ComputeFigure;
    encoder: ComputeFigure;
    projector: ComputeFigure;
    totalMs: number;
    /** Each encode call alone (the global views, then each page's tiles), in the order of `views`. */
    calls: { side: number; count: number; sam: ComputeFigure; encoder: ComputeFigure }[];
  };
  prefill?: ComputeFigure & { tokensPerSecond: number };
  decode?: { tokens: number; ms: number; tokensPerSecond: number; gbps: number; efficiency: number };
  weightBytes: number;
  peakRssBytes: number;
}

/** `ceilings`: those of where the model ran (the GPU's with --device gpu, where the encoders run too). */
export function summarisePage(answer: PageAnswer, ceilings: MachineCeilings): PageSummary {
  const spec = pageCase(answer.caseId);
  const summary: PageSummary = {
    id: spec.id,
    variant: spec.variant,
    mode: spec.mode,
    task: spec.task,
    pages: spec.pages,
    views: answer.views,
    promptTokens: answer.promptTokens,
    imageTokens: answer.imageTokens,
    runs: Math.max(answer.encode.length, answer.prefillMs.length),
    weightBytes: answer.weightBytes,
    peakRssBytes: answer.peakRssBytes,
  };
  const { work } = answer;
  if (answer.encode.length > 0) {
    summary.encode = {
      sam: computeFigure(work.sam, answer.encode.map((s) => s.sam), ceilings),
      encoder: computeFigure(work.encoder, answer.encode.map((s) => s.encoder), ceilings),
      projector: computeFigure(work.projector, answer.encode.map((s) => s.projector), ceilings),
      totalMs: median(answer.encode.map((s) => s.total)),
      calls: answer.views.map((view, i) => ({
        ...view,
        sam: computeFigure(work.calls[i].sam, answer.encode.map((s) => s.calls[i].sam), ceilings),
        encoder: computeFigure(work.calls[i].encoder, answer.encode.map((s) => s.calls[i].encoder), ceilings),
      })),
    };
  }
  if (answer.prefillMs.length > 0) {
    const prefill = computeFigure(work.prefill, answer.prefillMs, ceilings);
    summary.prefill = { ...prefill, tokensPerSecond: answer.promptTokens / (prefill.ms / 1000) };
    const steps = answer.decodeTokens - 1; // the first token comes from the prefill's logits
    const ms = median(answer.decodeMs);
    summary.decode = {
      tokens: answer.decodeTokens,
      ms,
      tokensPerSecond: steps / (ms / 1000),
      gbps: work.decodeBytes / 1e6 / ms,
      efficiency: bandwidthEfficiency(work.decodeBytes, ms, ceilings.readGBps),
    };
  }
  return summary;
}

export interface BatchSummary {
  variant: string;
  quantize: string;
  prefixTokens: number;
  steps: number;
  rows: {
    batch: number;
    /** Distinct routed experts per MoE layer and step, measured. */
    distinctExperts: number;
    /** Peak resident memory of the measuring process up to and including this batch size. */
    peakRssBytes: number;
    msPerStep: number;
    tokensPerSecond: number;
    bytesPerStep: number;
    efficiency: number;
    /** Tokens/s if every step ran at the read bandwidth. */
    ceilingTokensPerSecond: number;
  }[];
  peakRssBytes: number;
}

export function summariseBatch(answer: BatchAnswer, ceilings: MachineCeilings): BatchSummary {
  return {
    variant: answer.variant,
    quantize: answer.quantize,
    prefixTokens: answer.prefixTokens,
    steps: answer.steps,
    rows: answer.rows.map(({ batch, ms, distinctExperts, bytes, peakRssBytes }) => {
      const total = median(ms);
      const bytesPerStep = bytes / answer.steps;
      return {
        batch,
        distinctExperts,
        peakRssBytes,
        msPerStep: total / answer.steps,
        tokensPerSecond: (batch * answer.steps) / (total / 1000),
        bytesPerStep,
        efficiency: bandwidthEfficiency(bytes, total, ceilings.readGBps),
        ceilingTokensPerSecond: batch / (bytesPerStep / (ceilings.readGBps * 1e9)),
      };
    }),
    peakRssBytes: answer.peakRssBytes,
  };
}

export interface LatencyPoint {
  /** Tokens generated so far, the one this step feeds included. */
  generated: number;
  /** Median step time over the 32 steps up to here (fewer at the start). */
  ms: number;
  ceilingMs: number;
  efficiency: number;
}

export interface LatencySummary {
  variant: string;
  prefixTokens: number;
  steps: number;
  prefillMs: number;
  /** Per step: the median over the runs, and the time its bytes take at the read bandwidth. */
  stepMs: number[];
  ceilingStepMs: number[];
  points: LatencyPoint[];
  peakRssBytes: number;
}

/** Generated lengths the latency table reports, where the run reaches them. */
const LATENCY_POINTS = [1, 128, 256, 1024, 2048, 4096];
const POINT_WINDOW = 32;

export function summariseLatency(answer: LatencyAnswer, ceilings: MachineCeilings): LatencySummary {
  const stepMs = medianSeries(answer.stepMs);
  const ceilingStepMs = answer.stepBytes.map((bytes) => (bytes / (ceilings.readGBps * 1e9)) * 1000);
  const steps = stepMs.length;
  const points = [...new Set([...LATENCY_POINTS.filter((n) => n < steps), steps])].map((generated) => {
    const from = Math.max(0, generated - POINT_WINDOW);
    const ms = median(stepMs.slice(from, generated));
    const ceilingMs = median(ceilingStepMs.slice(from, generated));
    return { generated, ms, ceilingMs, efficiency: ceilingMs / ms };
  });
  return {
    variant: answer.variant,
    prefixTokens: answer.prefixTokens,
    steps,
    prefillMs: median(answer.prefillMs),
    stepMs,
    ceilingStepMs,
    points,
    peakRssBytes: answer.peakRssBytes,
  };
}
