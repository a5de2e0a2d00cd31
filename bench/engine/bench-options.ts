// Command-line options of `npm run bench`.
import os from 'node:os';
import path from 'node:path';

import { parseCommandLine } from '../../src/cli/command-line.js';
import { DEVICE_OPTION } from '../../src/cli/device-option.js';
import { choice, choices, flag, integer, integers, positiveNumber, text } from '../../src/cli/options.js';
import { HelpRequested, UsageError } from '../../src/cli/usage.js';
import { DEVICE_CHOICES, type DeviceSpec } from '../../src/engine/compute-device.js';
import type { ModelSize } from '../../src/model/synth/model-configs.js';
import { QUANTIZE_CHOICES, type WeightQuantization } from '../../src/engine/native-binding.js';
import { COMMAND_DEFAULT_PRECISION, PRECISION_CHOICES, type Precision } from '../../src/engine/precision.js';
import { PAGE_CASES, type PageCase } from './page-cases.js';
import { PEER_CASES } from './peer-cases.js';

export const PARTS = ['ceilings', 'throughput', 'encoders', 'decode', 'latency', 'batch', 'kvcache', 'accuracy', 'shared-weights', 'peer'] as const;
/** A part a plain run leaves out: it holds two full copies of the weights at once. */
const ONLY_WHEN_NAMED: Part = 'shared-weights';
export type Part = (typeof PARTS)[number];

/** Tokens generated per page in the comparison with the peer (the speed issue's figure). */
const PEER_TOKENS = 256;
/** What a real page generates, about: the throughput part's default. */
const THROUGHPUT_TOKENS = 1000;
const THROUGHPUT_BATCHES = [8, 16, 32, 64];
/** Page cases of one page per prompt, which the throughput part reads. */
const THROUGHPUT_CASES = PAGE_CASES.filter((c) => c.pages === 1);

export const USAGE = `Usage: npm run bench -- [options]

Measures the engine on full-size synthetic checkpoints against this machine's ceilings. Results:
a table on stdout, JSON and an SVG plot in --out; progress on stderr.

  --models DIR         checkpoints, generated on first use (about 6.7 GB per full-size variant)
                       (default $SCRIPTORIUM_BENCH_MODELS, else ~/.cache/scriptorium/bench-models)
  --size full|tiny     checkpoint size (default full); tiny checks the harness itself in seconds,
                       its figures mean nothing
  --out DIR            where results are written (default bench-results)
  --runs N             runs of every measurement; medians are reported (default 3)
  --only PARTS         comma-separated parts: ${PARTS.join(', ')}
                       (default all but shared-weights, which runs only when named, and peer only with
                       --peer-bin; the ceilings are measured in every run, since every ratio needs them)
  --cases IDS          page cases for encoders, decode and accuracy: ${PAGE_CASES.map((c) => c.id).join(', ')} (default all)
  --throughput-cases IDS  pages the throughput part reads as a worker does: ${THROUGHPUT_CASES.map((c) => c.id).join(', ')}
                       (default v1-base)
  --throughput-batches LIST  continuous batch sizes of the throughput part (default ${THROUGHPUT_BATCHES.join(',')})
  --throughput-tokens N  tokens each page generates there (default ${THROUGHPUT_TOKENS}, a real page's length)
  --throughput-pages N   pages per batch size there (default twice the batch size)
  --throughput-quantize LIST  weights of the throughput part: none, int8 or both (default none,int8)
  --core-hour-usd X    price of one core-hour: the throughput part then prints US dollars per million pages
  --peer-bin PATH      the peer's executable (ds-ocr's ds_ocr, built as bench/README.md describes): the peer
                       part reads the same pages with it, runs interleaved with ours
  --peer-cases IDS     pages of the peer part: ${PEER_CASES.map((c) => c.id).join(', ')} (default all)
  --max-len N          generated tokens of the latency sweep (default 4096)
  --decode-tokens N    tokens generated per page case (default 128; in the peer part ${PEER_TOKENS})
  --batch-steps N      decode steps per batch size, and per KV-cache storage in kvcache (default 32)
  --threads N          engine threads (default: every CPU)
  --device D           where the decoder runs: ${DEVICE_CHOICES} (default cpu); on a GPU the
                       device's ceilings are measured too and the decoder's figures are ratios to them
  --precision P        ${PRECISION_CHOICES.join(' or ')}: the engine's precision for every part (default ${COMMAND_DEFAULT_PRECISION},
                       as the commands); the accuracy part compares fast with exact whatever it is
  --quick              one run, 16 decode tokens, --max-len 256, 8 batch steps, throughput batches 2,4
                       of 32 tokens, a shorter ceilings probe (explicit options still win)`;

export interface BenchOptions {
  modelsDir: string;
  size: ModelSize;
  outDir: string;
  runs: number;
  parts: ReadonlySet<Part>;
  cases: readonly PageCase[];
  throughput: {
    cases: readonly PageCase[];
    batches: number[];
    tokens: number;
    /** Pages per batch size; undefined: twice the batch size. */
    pages?: number;
    quantize: WeightQuantization[];
    coreHourUsd?: number;
  };
  /** The peer's executable; the peer part runs only with one. */
  peerBin?: string;
  peerCases: readonly PageCase[];
  peerTokens: number;
  maxLen: number;
  decodeTokens: number;
  batchSteps: number;
  threads: number;
  device: DeviceSpec;
  precision: Precision;
  ceilings: { bufferBytes: number; passes: number; seconds: number };
  /** The GPU ceilings probe's settings (used with a GPU device). */
  gpuCeilings: { bufferBytes: number; passes: number; matmulSide: number; seconds: number };
}

function defaultModelsDir(env: NodeJS.ProcessEnv): string {
  if (env.SCRIPTORIUM_BENCH_MODELS) return env.SCRIPTORIUM_BENCH_MODELS;
  return path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'scriptorium', 'bench-models');
}

const OPTIONS = {
  models: text(),
  size: choice(['full', 'tiny'] as const).default('full'),
  out: text().default('bench-results'),
  runs: integer({ min: 1 }),
  only: choices(PARTS),
  cases: choices(PAGE_CASES.map((c) => c.id)),
  'throughput-cases': choices(THROUGHPUT_CASES.map((c) => c.id)),
  'throughput-batches': integers({ min: 1 }),
  'throughput-tokens': integer({ min: 1 }),
  'throughput-pages': integer({ min: 1 }),
  'throughput-quantize': choices(QUANTIZE_CHOICES).default([...QUANTIZE_CHOICES]),
  'core-hour-usd': positiveNumber(),
  'peer-bin': text(),
  'peer-cases': choices(PEER_CASES.map((c) => c.id)),
  'max-len': integer({ min: 1 }),
  // The first token comes from the prefill, so a decode speed needs at least two.
  'decode-tokens': integer({ min: 2 }),
  'batch-steps': integer({ min: 1 }),
  threads: integer({ min: 1 }).default(os.availableParallelism()),
  device: DEVICE_OPTION,
  precision: choice(PRECISION_CHOICES).default(COMMAND_DEFAULT_PRECISION),
  quick: flag(),
};

/** Parsed and validated options; `help` when --help was given. */
export function parseBenchArgs(args: string[], env: NodeJS.ProcessEnv): BenchOptions | 'help' {
  let values;
  try {
    values = parseCommandLine(args, OPTIONS, undefined, env).options;
  } catch (error) {
    if (error instanceof HelpRequested) return 'help';
    throw error;
  }
  const { quick } = values;
  const peerBin = values['peer-bin'];
  const parts = new Set(values.only ?? PARTS.filter((part) => part !== ONLY_WHEN_NAMED && (part !== 'peer' || peerBin !== undefined)));
  if (parts.has('peer') && peerBin === undefined) {
    throw new UsageError('--only peer needs --peer-bin PATH, the peer\'s ds_ocr executable (bench/README.md says how to build it)');
  }
  return {
    modelsDir: path.resolve(values.models ?? defaultModelsDir(env)),
    size: values.size,
    outDir: path.resolve(values.out),
    runs: values.runs ?? (quick ? 1 : 3),
    parts,
    cases: values.cases === undefined ? PAGE_CASES : PAGE_CASES.filter((c) => values.cases!.includes(c.id)),
    throughput: {
      cases: THROUGHPUT_CASES.filter((c) => (values['throughput-cases'] ?? ['v1-base']).includes(c.id)),
      batches: values['throughput-batches'] ?? (quick ? [2, 4] : THROUGHPUT_BATCHES),
      tokens: values['throughput-tokens'] ?? (quick ? 32 : THROUGHPUT_TOKENS),
      pages: values['throughput-pages'],
      quantize: values['throughput-quantize'],
      coreHourUsd: values['core-hour-usd'],
    },
    peerBin: peerBin === undefined ? undefined : path.resolve(peerBin),
    peerCases: values['peer-cases'] === undefined ? PEER_CASES : PEER_CASES.filter((c) => values['peer-cases']!.includes(c.id)),
    peerTokens: values['decode-tokens'] ?? (quick ? 16 : PEER_TOKENS),
    maxLen: values['max-len'] ?? (quick ? 256 : 4096),
    decodeTokens: values['decode-tokens'] ?? (quick ? 16 : 128),
    batchSteps: values['batch-steps'] ?? (quick ? 8 : 32),
    threads: values.threads,
    device: values.device ?? { kind: 'cpu' },
    precision: values.precision,
    ceilings: quick ? { bufferBytes: 256 * 2 ** 20, passes: 3, seconds: 0.2 } : { bufferBytes: 2 ** 30, passes: 5, seconds: 0.5 },
    // Tiny checks the harness, on software renderers too: products small enough for a CPU to run.
    gpuCeilings:
      values.size === 'tiny'
        ? { bufferBytes: 64 * 2 ** 20, passes: 3, matmulSide: 256, seconds: 0.2 }
        : quick
          ? { bufferBytes: 256 * 2 ** 20, passes: 3, matmulSide: 1024, seconds: 0.2 }
          : { bufferBytes: 2 ** 30, passes: 5, matmulSide: 2048, seconds: 0.5 },
  };
}
