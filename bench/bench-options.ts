// Command-line options of `npm run bench`.
import os from 'node:os';
import path from 'node:path';

import { choiceOption, integerOption, parseCommandArgs, UsageError } from '../src/cli/usage.js';
import type { ModelSize } from '../src/model/synth/model-configs.js';
import { COMMAND_DEFAULT_PRECISION, PRECISION_CHOICES, type Precision } from '../src/engine/precision.js';
import { PAGE_CASES, type PageCase } from './page-cases.js';

export const PARTS = ['ceilings', 'encoders', 'decode', 'latency', 'batch', 'accuracy'] as const;
export type Part = (typeof PARTS)[number];

export const USAGE = `Usage: npm run bench -- [options]

Measures the engine on full-size synthetic checkpoints against this machine's ceilings. Results:
a table on stdout, JSON and an SVG plot in --out; progress on stderr.

  --models DIR         checkpoints, generated on first use (about 6.7 GB per full-size variant)
                       (default $SCRIPTORIUM_BENCH_MODELS, else ~/.cache/scriptorium/bench-models)
  --size full|tiny     checkpoint size (default full); tiny checks the harness itself in seconds,
                       its figures mean nothing
  --out DIR            where results are written (default bench-results)
  --runs N             runs of every measurement; medians are reported (default 3)
  --only PARTS         comma-separated parts: ${PARTS.join(', ')} (default all;
                       the ceilings are measured in every run, since every ratio needs them)
  --cases IDS          page cases for encoders, decode and accuracy: ${PAGE_CASES.map((c) => c.id).join(', ')} (default all)
  --max-len N          generated tokens of the latency sweep (default 4096)
  --decode-tokens N    tokens generated per page case (default 128)
  --batch-steps N      decode steps per batch size (default 32)
  --threads N          engine threads (default: every CPU)
  --precision P        ${PRECISION_CHOICES.join(' or ')}: the engine's precision for every part (default ${COMMAND_DEFAULT_PRECISION},
                       as the commands); the accuracy part compares fast with exact whatever it is
  --quick              one run, 16 decode tokens, --max-len 256, 8 batch steps, a shorter ceilings probe
                       (explicit options still win)`;

export interface BenchOptions {
  modelsDir: string;
  size: ModelSize;
  outDir: string;
  runs: number;
  parts: ReadonlySet<Part>;
  cases: readonly PageCase[];
  maxLen: number;
  decodeTokens: number;
  batchSteps: number;
  threads: number;
  precision: Precision;
  ceilings: { bufferBytes: number; passes: number; seconds: number };
}

/** The comma-separated `value` as a list of `choices`, each at most once. */
function listOption<C extends string>(value: string, name: string, choices: readonly C[]): C[] {
  const items = value.split(',').map((item) => item.trim());
  for (const item of items) {
    if (!choices.includes(item as C)) throw new UsageError(`--${name}: "${item}" is not one of ${choices.join(', ')}`, USAGE);
  }
  return [...new Set(items)] as C[];
}

function defaultModelsDir(env: NodeJS.ProcessEnv): string {
  if (env.SCRIPTORIUM_BENCH_MODELS) return env.SCRIPTORIUM_BENCH_MODELS;
  return path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'scriptorium', 'bench-models');
}

/** Parsed and validated options; `help` when --help was given. */
export function parseBenchArgs(args: string[], env: NodeJS.ProcessEnv): BenchOptions | 'help' {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      models: { type: 'string' },
      size: { type: 'string' },
      out: { type: 'string' },
      runs: { type: 'string' },
      only: { type: 'string' },
      cases: { type: 'string' },
      'max-len': { type: 'string' },
      'decode-tokens': { type: 'string' },
      'batch-steps': { type: 'string' },
      threads: { type: 'string' },
      precision: { type: 'string' },
      quick: { type: 'boolean' },
    },
    USAGE,
  );
  if (values.help) return 'help';
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, USAGE);
  const quick = values.quick === true;
  const caseIds = values.cases === undefined ? PAGE_CASES.map((c) => c.id) : listOption(values.cases, 'cases', PAGE_CASES.map((c) => c.id));
  return {
    modelsDir: path.resolve(values.models ?? defaultModelsDir(env)),
    size: values.size === undefined ? 'full' : choiceOption(values.size, 'size', ['full', 'tiny'] as const, USAGE),
    outDir: path.resolve(values.out ?? 'bench-results'),
    runs: integerOption(values.runs, 'runs', quick ? 1 : 3, USAGE, 1),
    parts: new Set(values.only === undefined ? PARTS : listOption(values.only, 'only', PARTS)),
    cases: PAGE_CASES.filter((c) => caseIds.includes(c.id)),
    maxLen: integerOption(values['max-len'], 'max-len', quick ? 256 : 4096, USAGE, 1),
    // The first token comes from the prefill, so a decode speed needs at least two.
    decodeTokens: integerOption(values['decode-tokens'], 'decode-tokens', quick ? 16 : 128, USAGE, 2),
    batchSteps: integerOption(values['batch-steps'], 'batch-steps', quick ? 8 : 32, USAGE, 1),
    threads: integerOption(values.threads, 'threads', os.availableParallelism(), USAGE, 1),
    precision: values.precision === undefined ? COMMAND_DEFAULT_PRECISION : choiceOption(values.precision, 'precision', PRECISION_CHOICES, USAGE),
    ceilings: quick ? { bufferBytes: 256 * 2 ** 20, passes: 3, seconds: 0.2 } : { bufferBytes: 2 ** 30, passes: 5, seconds: 0.5 },
  };
}
