// The int8 kernel sets side by side (`node dist/bench/engine/int8-products.js [--threads N]`): each set
// streams one int8 matrix far larger than the caches at batch 1 and 8, as decode reads its experts,
// and its weight bytes per second are divided by the memory read bandwidth measured in the same run.
import { parseArgs } from 'node:util';

import { measureCeilings, measureInt8Products } from './native-probes.js';
import { formatTable } from './report-table.js';

const { values } = parseArgs({ options: { threads: { type: 'string' } } });
const threads = values.threads === undefined ? undefined : Number(values.threads);
if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
  process.stderr.write(`--threads must be a positive integer, not ${values.threads}\n`);
  process.exit(2);
}

const ceilings = await measureCeilings({ threads, seconds: 0.1 });
const speeds = await measureInt8Products({ threads });
process.stdout.write(
  [
    `Int8 products: ${ceilings.threads} threads, memory read ${ceilings.readGBps.toFixed(1)} GB/s (${ceilings.readSimd} loads)`,
    formatTable(
      ['int8 kernels', 'batch', 'weights GB/s', 'of read bandwidth'],
      speeds.map((s) => [s.kernels, String(s.batch), s.weightGBps.toFixed(2), `${((100 * s.weightGBps) / ceilings.readGBps).toFixed(0)}%`]),
    ),
  ].join('\n') + '\n',
);
