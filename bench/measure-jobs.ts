// What the benchmark asks of a measuring process and what it answers. Each job runs in a process of
// its own (one model loaded once, every run of the job in it), so its peak resident memory is the
// job's own. Answers carry raw per-run samples and the work counted from the dims; the parent
// takes medians and ratios to the ceilings.
import type { DeviceSpec } from '../src/engine/compute-device.js';
import type { Variant } from '../src/engine/model-config.js';
import type { KvCacheDtype, WeightQuantization } from '../src/engine/native-model.js';
import type { Precision } from '../src/engine/precision.js';
import type { Flops } from './work-counts.js';

interface JobSettings {
  modelDir: string;
  threads: number;
  /** Where the decoder runs. */
  device: DeviceSpec;
  precision: Precision;
  runs: number;
}

/** One page case: its encoders (per stage) and/or its prefill and batch-1 decode. */
export interface PageJob extends JobSettings {
  part: 'page';
  caseId: string;
  encoders: boolean;
  decode: boolean;
  /** Tokens generated after the prefill; the first comes from the prefill's logits. */
  decodeTokens: number;
}

/** Decode steps of `batch` sequences together, for each batch size. */
export interface BatchJob extends JobSettings {
  part: 'batch';
  quantize: WeightQuantization;
  batches: number[];
  prefixTokens: number;
  steps: number;
}

/** Per-step decode latency of one sequence after a multi-page prefix. */
export interface LatencyJob extends JobSettings {
  part: 'latency';
  pages: number;
  steps: number;
}

/** Decode steps of one sequence after a long prefix per KV-cache storage, the storages' steps interleaved. */
export interface KvCacheJob extends JobSettings {
  part: 'kvcache';
  kvCaches: KvCacheDtype[];
  prefixTokens: number;
  steps: number;
}

/** Fast precision against exact on one page case: `steps` greedy tokens each. */
export interface AccuracyJob extends JobSettings {
  part: 'accuracy';
  caseId: string;
  steps: number;
}

export type MeasureJob = PageJob | BatchJob | LatencyJob | KvCacheJob | AccuracyJob;

/** Wall time of each stage of one encode call, in milliseconds. */
export interface StageSample {
  sam: number;
  encoder: number;
  projector: number;
}

/** One run's encode: the stages summed over the page's calls, each call's own, and the calls' wall time. */
export interface EncodeSample extends StageSample {
  calls: StageSample[];
  total: number;
}

export interface PageAnswer {
  caseId: string;
  /** One entry per encodeImages call: the global views of every page, then each page's tiles. */
  views: { side: number; count: number }[];
  promptTokens: number;
  imageTokens: number;
  decodeTokens: number;
  /** `calls`: each encode call's own counts, in the order of `views`. */
  work: { sam: Flops; encoder: Flops; projector: Flops; calls: { sam: Flops; encoder: Flops }[]; prefill: Flops; decodeBytes: number };
  /** Per run; empty when not measured. */
  encode: EncodeSample[];
  prefillMs: number[];
  decodeMs: number[];
  peakRssBytes: number;
  weightBytes: number;
}

export interface BatchAnswer {
  variant: Variant;
  quantize: WeightQuantization;
  prefixTokens: number;
  steps: number;
  /**
   * Per batch size: the forward time of all steps, per run; the distinct routed experts a MoE layer
   * ran per step (measured) and the bytes the steps read with them; peak RSS once it was measured.
   */
  rows: { batch: number; ms: number[]; distinctExperts: number; bytes: number; peakRssBytes: number }[];
  peakRssBytes: number;
}

export interface LatencyAnswer {
  variant: Variant;
  prefixTokens: number;
  prefillMs: number[];
  /** [run][step]: milliseconds of decode step `step` (generated length step + 1). */
  stepMs: number[][];
  /** Bytes each step reads (weights and KV cache). */
  stepBytes: number[];
  peakRssBytes: number;
}

export interface KvCacheAnswer {
  variant: Variant;
  prefixTokens: number;
  /** Bytes of the weights one step touches. */
  weightBytes: number;
  rows: {
    kvCache: KvCacheDtype;
    /** [run][step]: milliseconds of each decode step. */
    stepMs: number[][];
    /** Cache bytes a step's attention reads, on average over the steps. */
    cacheBytes: number;
  }[];
  peakRssBytes: number;
}

/** Fast against exact: the vision embeddings, the prefill logits and the greedy ids. */
export interface AccuracyAnswer {
  caseId: string;
  /** ‖fast − exact‖₂ / ‖exact‖₂ over the assembled vision embeddings, and their worst row cosine. */
  embedRelativeError: number;
  embedCosine: number;
  /** max |fast − exact| over max |exact| of the prefill logits. */
  logitRelativeError: number;
  steps: number;
  /** Leading greedy ids the two modes share. */
  agreeingSteps: number;
}

export type MeasureAnswer = PageAnswer | BatchAnswer | LatencyAnswer | KvCacheAnswer | AccuracyAnswer;

/** Peak resident memory of this process so far, in bytes. */
export function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024;
}
