// The products a decode step runs on its experts, at the rows a batch gives one expert
// (`node dist/bench/engine/expert-products.js [--threads N] [--batches 1,2,4,...] [--matrix-mib N]`):
// the active set's BF16 product (fast precision) and every int8 set the CPU has (both forms where it
// has two), each streaming one matrix, by default far larger than the caches; a matrix of a few MiB
// stays in the last-level cache, which measures the products' own speed. Weight bytes per second
// are divided by the read bandwidth and, for BF16, FLOPs per second by the fast BF16 GEMM ceiling,
// both measured in the same run. Their sum says how far the two overlap: 100% is a product that
// takes its memory time plus its compute time, one after the other.
import { defineCommand, type CommandLine } from '../../src/cli/command-line.js';
import { integer, integers } from '../../src/cli/options.js';
import { exitWith, runCommandLine } from '../../src/cli/usage.js';
import { measureCeilings, measureExpertProducts, type ExpertProductSpeed, type MachineCeilings } from './native-probes.js';
import { formatTable } from './report-table.js';

const USAGE = 'Usage: node dist/bench/engine/expert-products.js [--threads N] [--batches 1,2,4,6,8,12,16] [--matrix-mib 256]';
const OPTIONS = { threads: integer({ min: 1, max: 1024 }), batches: integers({ min: 1, max: 256 }), 'matrix-mib': integer({ min: 1, max: 4096 }) };
// Each measurement reads at least this much, so that a small matrix is timed over many passes.
const MIB_PER_MEASUREMENT = 1280;

/** One table row: the speeds and, for BF16, the shares of both ceilings and their sum. */
function expertProductRow(s: ExpertProductSpeed, ceilings: MachineCeilings): string[] {
  const ofRead = s.weightGBps / ceilings.readGBps;
  const percent = (x: number) => `${(100 * x).toFixed(0)}%`;
  const compute = s.format === 'bf16' ? [percent(s.gflops / ceilings.gemmBf16FastGflops), percent(ofRead + s.gflops / ceilings.gemmBf16FastGflops)] : ['n/a', 'n/a'];
  return [s.format, s.kernels, String(s.batch), s.weightGBps.toFixed(1), percent(ofRead), s.gflops.toFixed(0), ...compute];
}

async function main({ options: { threads, batches, 'matrix-mib': matrixMib = 256 } }: CommandLine<typeof OPTIONS>): Promise<number> {
  const ceilings = await measureCeilings({ threads, seconds: 0.1 });
  const passes = Math.max(5, Math.ceil(MIB_PER_MEASUREMENT / matrixMib));
  const speeds = await measureExpertProducts({ threads, batches, weightBytes: matrixMib * 2 ** 20, passes });
  process.stdout.write(
    [
      `Expert products: ${ceilings.threads} threads, ${matrixMib} MiB matrices, memory read ${ceilings.readGBps.toFixed(1)} GB/s (${ceilings.readSimd} loads), ` +
        `fast BF16 GEMM ${ceilings.gemmBf16FastGflops.toFixed(0)} GFLOP/s (${ceilings.kernels})`,
      formatTable(
        ['weights', 'kernels', 'rows', 'weights GB/s', 'of read', 'GFLOP/s', 'of fast GEMM', 'sum of both'],
        speeds.map((s) => expertProductRow(s, ceilings)),
      ),
    ].join('\n') + '\n',
  );
  return 0;
}

exitWith('expert-products', runCommandLine(defineCommand({ usage: USAGE, options: OPTIONS, run: main }), process.argv.slice(2), 'expert-products'));
