// `npm run bench`: the engine's speed on full-size synthetic checkpoints, next to this machine's
// ceilings (see bench/README.md). Each measurement runs in a process of its own; the results are
// saved after every part, so an interrupted run keeps what it measured.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { UsageError } from '../../src/cli/usage.js';
import { resolveDevice } from '../../src/engine/compute-device.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { QUANTIZE_CHOICES } from '../../src/engine/native-binding.js';
import type { Precision } from '../../src/engine/precision.js';
import { parseBenchArgs, USAGE, type BenchOptions } from './bench-options.js';
import { benchCheckpoint } from './checkpoints.js';
import { kvCacheText, summariseKvCache, type KvCacheSummary } from './kv-cache-report.js';
import { runMeasureProcess } from './measure-client.js';
import type { AccuracyAnswer, PeerAnswer, PeerMode } from './measure-jobs.js';
import { gpuModelCeilings, measureCeilings, measureGpuCeilings, type GpuCeilings, type MachineCeilings } from './native-probes.js';
import { mergePeerAnswers, peerText, summarisePeer, type PeerComparison } from './peer-report.js';
import { checkPeerBinary } from './peer-run.js';
import { accuracyText, batchText, ceilingsText, decoderText, encodersText, gpuCeilingsText, latencyText } from './report-table.js';
import {
  summariseBatch,
  summariseLatency,
  summarisePage,
  type BatchSummary,
  type LatencySummary,
  type PageSummary,
} from './summary.js';
import { linePlotSvg, type PlotSeries } from './svg-plot.js';
import { measureSharedWeights, sharedWeightsText, type SharedWeightsRow } from './measure-shared-weights.js';
import { summariseThroughput, throughputText, type ThroughputSummary } from './throughput-report.js';

const BATCH_SIZES = [1, 4, 8, 16];
/** A GPU's batches reach further: the target is 64 sequences at 20 times the speed of one. */
const GPU_BATCH_SIZES = [1, 8, 16, 64];
const BATCH_VARIANT: Variant = 'v1';
const BATCH_PREFIX_TOKENS = 256;
const LATENCY_VARIANTS: readonly Variant[] = ['v1', 'v3'];
/** The shared-weights part: processes on one node with the weights shared, and the page each reads. */
const SHARED_WEIGHTS_VARIANT: Variant = 'v1';
const SHARED_WEIGHTS_PROCESSES = [1, 2, 4];
const SHARED_WEIGHTS_TOKENS = 32;
const LATENCY_PAGES = 10;
const KV_CACHE_VARIANT: Variant = 'v1';
const KV_CACHE_PREFIX_TOKENS = 3000;
/** Our modes beside the peer: both precisions against its BF16 experts; int8 against its 8-bit experts. */
const peerModes = (precision: Precision): PeerMode[] => [
  { precision: 'exact', quantize: 'none' },
  { precision: 'fast', quantize: 'none' },
  { precision, quantize: 'int8' },
];
const PLOT_COLORS: Record<Variant, string> = { v1: '#1f77b4', v2: '#2ca02c', v3: '#d62728' };

interface BenchResults {
  startedAt: string;
  finishedAt?: string;
  machine: { cpu: string; cpus: number; memoryBytes: number; node: string; platform: string };
  options: Omit<BenchOptions, 'parts' | 'cases'> & { parts: string[]; cases: string[] };
  ceilings: MachineCeilings;
  /** With --device gpu: the device's ceilings, which the decoder's figures are ratios to. */
  gpuCeilings?: GpuCeilings;
  pages: PageSummary[];
  /** Batched decode with the checkpoint's BF16 experts, then with --quantize int8. */
  batch: BatchSummary[];
  latency: LatencySummary[];
  latencyPlot?: string;
  kvCache: KvCacheSummary[];
  accuracy: AccuracyAnswer[];
  /** Side by side with the peer (ds-ocr), per page. */
  peer: PeerComparison[];
  /** Pages read as a worker reads them, per case, weights and batch size. */
  throughput: ThroughputSummary[];
  sharedWeights: SharedWeightsRow[];
}

function latencyPlot(latency: readonly LatencySummary[]): string {
  const series: PlotSeries[] = latency.flatMap((l) => {
    const color = PLOT_COLORS[l.variant as Variant];
    return [
      { name: `${l.variant} measured`, color, points: l.stepMs.map((ms, i) => [i + 1, ms] as const) },
      { name: `${l.variant} at read bandwidth`, color, dashed: true, points: l.ceilingStepMs.map((ms, i) => [i + 1, ms] as const) },
    ];
  });
  return linePlotSvg(series, {
    title: `Decode step latency after a ${LATENCY_PAGES}-page prefix (median of runs)`,
    xLabel: 'generated tokens',
    yLabel: 'ms per step',
  });
}

async function main(args: string[]): Promise<number> {
  const options = parseBenchArgs(args, process.env);
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const started = new Date();
  const progress = (line: string) =>
    process.stderr.write(`bench ${((Date.now() - started.getTime()) / 1000).toFixed(0).padStart(5)} s  ${line}\n`);
  const print = (text: string) => {
    if (text) process.stdout.write(`\n${text}\n`);
  };
  const { parts } = options;
  if (parts.has('peer')) await checkPeerBinary(options.peerBin!);
  const device = await resolveDevice(options.device);
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const jsonFile = path.join(options.outDir, `bench-${stamp}.json`);
  const svgFile = path.join(options.outDir, `bench-${stamp}-latency.svg`);
  await mkdir(options.outDir, { recursive: true });

  progress(`measuring the ceilings on ${options.threads} threads`);
  const results: BenchResults = {
    startedAt: started.toISOString(),
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cpus: os.cpus().length, memoryBytes: os.totalmem(), node: process.version, platform: process.platform },
    options: { ...options, parts: [...parts], cases: options.cases.map((c) => c.id) },
    ceilings: await measureCeilings({ threads: options.threads, ...options.ceilings }),
    pages: [],
    batch: [],
    latency: [],
    kvCache: [],
    accuracy: [],
    peer: [],
    throughput: [],
    sharedWeights: [],
  };
  const save = () => writeFile(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
  await save();
  print(ceilingsText(results.ceilings, options.ceilings.bufferBytes, options.ceilings.passes));
  // The encoders' and prefill's ratios use the GEMM ceiling of the products the precision runs.
  const computeCeilings: MachineCeilings =
    options.precision === 'fast' ? { ...results.ceilings, gemmBf16Gflops: results.ceilings.gemmBf16FastGflops } : results.ceilings;
  let modelCeilings = computeCeilings;
  if (device.backend === 'vulkan') {
    progress(`measuring the ceilings of gpu:${device.index} (${device.name})`);
    results.gpuCeilings = await measureGpuCeilings({ device: device.index, ...options.gpuCeilings });
    modelCeilings = gpuModelCeilings(computeCeilings, results.gpuCeilings);
    await save();
    print(gpuCeilingsText(results.gpuCeilings, options.gpuCeilings.passes, options.gpuCeilings.matmulSide));
  }

  const settings = (modelDir: string) => ({ modelDir, threads: options.threads, device: options.device, precision: options.precision, runs: options.runs });
  const checkpoints = new Map<Variant, string>();
  const checkpoint = async (variant: Variant) => {
    if (!checkpoints.has(variant)) checkpoints.set(variant, await benchCheckpoint(options.modelsDir, variant, options.size, progress));
    return checkpoints.get(variant)!;
  };

  if (parts.has('throughput')) {
    const { throughput } = options;
    for (const spec of throughput.cases) {
      for (const quantize of throughput.quantize) {
        for (const batch of throughput.batches) {
          const pages = throughput.pages ?? 2 * batch;
          progress(`throughput on ${spec.id}, quantize ${quantize}, batch ${batch}: ${pages} pages of ${throughput.tokens} tokens`);
          // One run per batch size (each is minutes long); --runs is not used here.
          const answer = await runMeasureProcess({ part: 'throughput', ...settings(await checkpoint(spec.variant)), caseId: spec.id, quantize, batch, pages, tokens: throughput.tokens });
          results.throughput.push(summariseThroughput(answer, computeCeilings, throughput.coreHourUsd));
          await save();
        }
      }
    }
    print(throughputText(results.throughput, computeCeilings));
  }

  if (parts.has('shared-weights')) {
    progress('memory of worker processes on one node, packed weights private and shared');
    results.sharedWeights = await measureSharedWeights(
      { modelDir: await checkpoint(SHARED_WEIGHTS_VARIANT), threads: options.threads, precision: options.precision, processes: SHARED_WEIGHTS_PROCESSES, tokens: SHARED_WEIGHTS_TOKENS },
      progress,
    );
    await save();
    print(sharedWeightsText(results.sharedWeights));
  }

  if (parts.has('encoders') || parts.has('decode')) {
    for (const spec of options.cases) {
      progress(`page case ${spec.id}`);
      const answer = await runMeasureProcess({
        part: 'page',
        ...settings(await checkpoint(spec.variant)),
        caseId: spec.id,
        encoders: parts.has('encoders'),
        decode: parts.has('decode'),
        decodeTokens: options.decodeTokens,
      });
      results.pages.push(summarisePage(answer, modelCeilings));
      await save();
    }
    progress(`encoders and prefill at --precision ${options.precision}: ratios to its gemm ceiling`);
    print(encodersText(results.pages));
    print(decoderText(results.pages));
  }

  if (parts.has('batch')) {
    for (const quantize of QUANTIZE_CHOICES) {
      progress(`batched decode on ${BATCH_VARIANT}, quantize ${quantize}`);
      const answer = await runMeasureProcess({
        part: 'batch',
        ...settings(await checkpoint(BATCH_VARIANT)),
        quantize,
        batches: device.backend === 'vulkan' ? GPU_BATCH_SIZES : BATCH_SIZES,
        prefixTokens: BATCH_PREFIX_TOKENS,
        steps: options.batchSteps,
      });
      results.batch.push(summariseBatch(answer, modelCeilings));
      await save();
      print(batchText(results.batch[results.batch.length - 1]));
    }
  }

  if (parts.has('latency')) {
    for (const variant of LATENCY_VARIANTS) {
      progress(`decode latency on ${variant}`);
      const answer = await runMeasureProcess({
        part: 'latency',
        ...settings(await checkpoint(variant)),
        pages: LATENCY_PAGES,
        steps: options.maxLen,
      });
      results.latency.push(summariseLatency(answer, modelCeilings));
      await writeFile(svgFile, latencyPlot(results.latency));
      results.latencyPlot = svgFile;
      await save();
    }
    print(latencyText(results.latency, svgFile));
  }

  if (parts.has('kvcache')) {
    progress(`decode after ${KV_CACHE_PREFIX_TOKENS} tokens on ${KV_CACHE_VARIANT}, F32 and half KV caches in turns`);
    const answer = await runMeasureProcess({
      part: 'kvcache',
      ...settings(await checkpoint(KV_CACHE_VARIANT)),
      kvCaches: ['f32', 'f16'],
      prefixTokens: KV_CACHE_PREFIX_TOKENS,
      steps: options.batchSteps,
    });
    results.kvCache = summariseKvCache(answer, results.ceilings);
    await save();
    print(kvCacheText(results.kvCache));
  }

  if (parts.has('accuracy')) {
    for (const spec of options.cases) {
      progress(`accuracy of fast against exact on ${spec.id}`);
      const answer = await runMeasureProcess({ part: 'accuracy', ...settings(await checkpoint(spec.variant)), caseId: spec.id, steps: options.decodeTokens });
      results.accuracy.push(answer);
      await save();
    }
    print(accuracyText(results.accuracy));
  }

  if (parts.has('peer')) {
    for (const pageCase of options.peerCases) {
      progress(`side by side with the peer on ${pageCase.id}, ${options.runs} interleaved runs`);
      const { precision, ...jobSettings } = settings(await checkpoint(pageCase.variant));
      // One measuring process per mode; the peer runs in the first one of each peer setting.
      const answers: PeerAnswer[] = [];
      for (const mode of peerModes(precision)) {
        const int8 = mode.quantize === 'int8';
        const withPeer = !answers.some((a) => a.peer.some((p) => p.int8 === int8));
        answers.push(
          await runMeasureProcess({ part: 'peer', ...jobSettings, pageCase, peerBin: options.peerBin!, tokens: options.peerTokens, mode, withPeer }),
        );
      }
      results.peer.push(summarisePeer(mergePeerAnswers(answers)));
      await save();
    }
    print(peerText(results.peer));
  }

  results.finishedAt = new Date().toISOString();
  await save();
  progress(`results in ${jsonFile}`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`bench: ${error.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
