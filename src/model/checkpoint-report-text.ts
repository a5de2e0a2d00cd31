// The text `model check` prints, and workers log when they refuse a checkpoint.
import type { CheckpointReport } from './checkpoint-check.js';

const LISTED = 8;

export function formatCheckpointReport(report: CheckpointReport): string {
  const lines = [`checkpoint ${report.location}`];
  const row = (label: string, value: string) => lines.push(`  ${label.padEnd(11)} ${value}`);
  if (report.variant) row('variant', report.variant + (report.synthetic ? ' (SYNTHETIC: random weights written by model synth)' : ''));
  if (report.parameters !== undefined) row('parameters', report.parameters.toLocaleString('en-US'));
  const dtypes = Object.entries(report.dtypes).map(([dtype, count]) => `${dtype} ${count.toLocaleString('en-US')}`);
  if (dtypes.length > 0) row('tensors', `${dtypes.join(', ')} (${gigabytes(report.weightBytes)} memory-mapped)`);
  if (report.conversionBytes > 0) row('memory', `+ up to ${gigabytes(report.conversionBytes)} for BF16 copies of the F16/F32 weights, made at load`);
  if (report.unexpected.length > 0) {
    const shown = report.unexpected.slice(0, LISTED).map((t) => `${t.name} ${t.dtype} [${t.shape}]`);
    row('ignored', `${report.unexpected.length} ${report.unexpected.length === 1 ? 'tensor' : 'tensors'} the model does not use: ${shown.join(', ')}${report.unexpected.length > LISTED ? ', …' : ''}`);
  }
  row('tokenizer', `${report.tokenizer.present.join(', ') || 'no files'}${report.tokenizer.absent.length ? ` (absent: ${report.tokenizer.absent.join(', ')})` : ''}; vocabulary ${report.tokenizer.vocabulary}`);
  if (report.identity) row('identity', report.identity);
  for (const warning of report.warnings) row('warning', warning);
  if (report.problems.length > 0) {
    lines.push(`  problems (${report.problems.length}):`);
    for (const problem of report.problems.slice(0, 40)) lines.push(`    - ${problem}`);
    if (report.problems.length > 40) lines.push(`    - … and ${report.problems.length - 40} more`);
  }
  lines.push(report.loadable ? '  result      a worker would load it' : '  result      a worker would refuse it');
  return lines.join('\n');
}

function gigabytes(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;
}
