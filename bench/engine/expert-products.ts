// The products a decode step runs on its experts, at the rows a batch gives one expert
// (`node dist/bench/engine/expert-products.js [--threads N] [--batches 1,2,4,...]`): the active set's
// BF16 product (fast precision) and every int8 set the CPU has, each streaming one matrix far larger
// than the caches. Weight bytes per second are divided by the read bandwidth and, for BF16, FLOPs per
// second by the fast BF16 GEMM ceiling, both measured in the same run. Their sum says how far the two
// overlap: 100% is a product that takes its memory time plus its compute time, one after the other.
import { parseArgs } from 'node:util';

import { measureCeilings, measureExpertProducts, type ExpertProductSpeed, type MachineCeilings } from './native-probes.js';
import { formatTable } from './report-table.js';

function positiveIntegers(flag: string, text: string | undefined): number[] | undefined {
  if (text === undefined) return undefined;
  const values = text.split(',').map(Number);
  if (values.length === 0 || !values.every((v) => Number.isInteger(v) && v >= 1)) {
    process.stderr.write(`${flag} must be positive integers separated by commas, not ${text}\n`);
    process.exit(2);
  }
  return values;
}

/** One table row: the speeds and, for BF16, the shares of both ceilings and their sum. */
function expertProductRow(s: ExpertProductSpeed, ceilings: MachineCeilings): string[] {
  const ofRead = s.weightGBps / ceilings.readGBps;
  const percent = (x: number) => `${(100 * x).toFixed(0)}%`;
  const compute = s.format === 'bf16' ? [percent(s.gflops / ceilings.gemmBf16FastGflops), percent(ofRead + s.gflops / ceilings.gemmBf16FastGflops)] : ['n/a', 'n/a'];
  return [s.format, s.kernels, String(s.batch), s.weightGBps.toFixed(1), percent(ofRead), s.gflops.toFixed(0), ...compute];
}

const { values } = parseArgs({ options: { threads: { type: 'string' }, batches: { type: 'string' } } });
const threadList = positiveIntegers('--threads', values.threads);
if (threadList && threadList.length !== 1) {
  process.stderr.write(`--threads must be one positive integer, not ${values.threads}\n`);
  process.exit(2);
}
const threads = threadList?.[0];
const batches = positiveIntegers('--batches', values.batches);

const ceilings = await measureCeilings({ threads, seconds: 0.1 });
const speeds = await measureExpertProducts({ threads, batches });
process.stdout.write(
  [
    `Expert products: ${ceilings.threads} threads, memory read ${ceilings.readGBps.toFixed(1)} GB/s (${ceilings.readSimd} loads), ` +
      `fast BF16 GEMM ${ceilings.gemmBf16FastGflops.toFixed(0)} GFLOP/s (${ceilings.kernels})`,
    formatTable(
      ['weights', 'kernels', 'rows', 'weights GB/s', 'of read', 'GFLOP/s', 'of fast GEMM', 'sum of both'],
      speeds.map((s) => expertProductRow(s, ceilings)),
    ),
  ].join('\n') + '\n',
);
