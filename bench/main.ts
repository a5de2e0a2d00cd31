// `npm run bench`: the engine's speed on full-size synthetic checkpoints, next to this machine's
// ceilings (see bench/README.md). Each measurement runs in a process of its own; the results are
// saved after every part, so an interrupted run keeps what it measured.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { UsageError } from '../src/cli/usage.js';
import type { Variant } from '../src/engine/model-config.js';
import { QUANTIZE_CHOICES } from '../src/engine/native-model.js';
import { parseBenchArgs, USAGE, type BenchOptions } from './bench-options.js';
import { benchCheckpoint } from './checkpoints.js';
import { runMeasureProcess } from './measure-client.js';
import { measureCeilings, type MachineCeilings } from './native-probes.js';
import { batchText, ceilingsText, decoderText, encodersText, latencyText } from './report-table.js';
import {
  summariseBatch,
  summariseLatency,
  summarisePage,
  type BatchSummary,
  type LatencySummary,
  type PageSummary,
} from './summary.js';
import { linePlotSvg, type PlotSeries } from './svg-plot.js';

const BATCH_SIZES = [1, 4, 8, 16];
const BATCH_VARIANT: Variant = 'v1';
const BATCH_PREFIX_TOKENS = 256;
const LATENCY_VARIANTS: readonly Variant[] = ['v1', 'v3'];
const LATENCY_PAGES = 10;
const PLOT_COLORS: Record<Variant, string> = { v1: '#1f77b4', v2: '#2ca02c', v3: '#d62728' };

interface BenchResults {
  startedAt: string;
  finishedAt?: string;
  machine: { cpu: string; cpus: number; memoryBytes: number; node: string; platform: string };
  options: Omit<BenchOptions, 'parts' | 'cases'> & { parts: string[]; cases: string[] };
  ceilings: MachineCeilings;
  pages: PageSummary[];
  /** Batched decode with the checkpoint's BF16 experts, then with --quantize int8. */
  batch: BatchSummary[];
  latency: LatencySummary[];
  latencyPlot?: string;
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
  };
  const save = () => writeFile(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
  await save();
  print(ceilingsText(results.ceilings, options.ceilings.bufferBytes, options.ceilings.passes));

  const settings = (modelDir: string) => ({ modelDir, threads: options.threads, runs: options.runs });
  const checkpoints = new Map<Variant, string>();
  const checkpoint = async (variant: Variant) => {
    if (!checkpoints.has(variant)) checkpoints.set(variant, await benchCheckpoint(options.modelsDir, variant, options.size, progress));
    return checkpoints.get(variant)!;
  };

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
      results.pages.push(summarisePage(answer, results.ceilings));
      await save();
    }
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
        batches: BATCH_SIZES,
        prefixTokens: BATCH_PREFIX_TOKENS,
        steps: options.batchSteps,
      });
      results.batch.push(summariseBatch(answer, results.ceilings));
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
      results.latency.push(summariseLatency(answer, results.ceilings));
      await writeFile(svgFile, latencyPlot(results.latency));
      results.latencyPlot = svgFile;
      await save();
    }
    print(latencyText(results.latency, svgFile));
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
      process.stderr.write(`bench: ${error.message}\n\n${error.usage}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
