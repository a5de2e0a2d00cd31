// The benchmark's results as plain-text tables for stdout.
import type { AccuracyAnswer } from './measure-jobs.js';
import type { GpuCeilings, MachineCeilings } from './native-probes.js';
import type { BatchSummary, ComputeFigure, LatencySummary, PageSummary } from './summary.js';

/** Columns padded to their widest cell; the first column left-aligned, the others right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const percent = (fraction: number) => `${(100 * fraction).toFixed(fraction < 0.1 ? 1 : 0)}%`;
const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;

export function fixed(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

const stage = (f: ComputeFigure | undefined) => (f ? `${fixed(f.ms)} ms ${percent(f.efficiency)}` : '-');

export function ceilingsText(c: MachineCeilings, bufferBytes: number, passes: number): string {
  const peak = (value: number) => (value > 0 ? `${fixed(value)} GFLOP/s` : 'unknown');
  return [
    `Ceilings: ${c.kernels} kernels, ${c.threads} threads, one core at ${c.clockGhz > 0 ? `${c.clockGhz.toFixed(2)} GHz` : 'an unknown clock'}`,
    formatTable(
      ['ceiling', 'measured', 'instruction peak'],
      [
        [`memory read (${c.readSimd} loads, best of ${passes} passes over ${(bufferBytes / 2 ** 20).toFixed(0)} MiB)`, `${fixed(c.readGBps)} GB/s`, ''],
        ['gemm_f32 on L2-resident blocks', `${fixed(c.gemmF32Gflops)} GFLOP/s`, peak(c.peakF32Gflops)],
        ['gemm_bf16 on L2-resident blocks (faster of stored, packed weights)', `${fixed(c.gemmBf16Gflops)} GFLOP/s`, peak(c.peakBf16Gflops)],
        ['gemm_bf16_fast (--precision fast) on L2-resident blocks', `${fixed(c.gemmBf16FastGflops)} GFLOP/s`, ''],
      ],
    ),
  ].join('\n');
}

export function gpuCeilingsText(c: GpuCeilings, passes: number, side: number): string {
  return [
    `GPU ceilings: ${c.device} (the decoder's prefill, decode, batch and latency figures below are ratios to these)`,
    formatTable(
      ['ceiling', 'measured'],
      [
        [`memory read (read shader, best of ${passes} rounds over ${(c.bufferBytes / 2 ** 20).toFixed(0)} MiB)`, `${fixed(c.readGBps)} GB/s`],
        ...c.matmul.map((m) => [`matmul_bf16 ${m.path} path, ${side}×${side}×${side}`, `${fixed(m.gflops)} GFLOP/s`]),
      ],
    ),
  ].join('\n');
}

export function encodersText(pages: readonly PageSummary[]): string {
  const rows = pages
    .filter((p) => p.encode)
    .map((p) => [
      p.id,
      p.views.map((v) => `${v.count}×${v.side}`).join(' + '),
      stage(p.encode!.sam),
      stage(p.encode!.encoder),
      stage(p.encode!.projector),
      fixed(p.encode!.totalMs),
    ]);
  if (rows.length === 0) return '';
  const calls = pages
    .filter((p) => p.encode && p.encode.calls.length > 1)
    .flatMap((p) => p.encode!.calls.map((c) => [p.id, `${c.count}×${c.side}`, stage(c.sam), stage(c.encoder)]));
  return [
    'Vision encoders: median ms per page prompt, % of the GEMM ceiling',
    formatTable(['case', 'views', 'SAM', 'CLIP / Qwen2', 'projector', 'total ms'], rows),
    ...(calls.length > 0 ? ['', 'Each encode call of the pages with tiles (global views, then tiles)', formatTable(['case', 'call', 'SAM', 'CLIP / Qwen2'], calls)] : []),
  ].join('\n');
}

export function decoderText(pages: readonly PageSummary[]): string {
  const rows = pages
    .filter((p) => p.prefill && p.decode)
    .map((p) => [
      p.id,
      String(p.promptTokens),
      `${fixed(p.prefill!.tokensPerSecond)} ${percent(p.prefill!.efficiency)}`,
      `${fixed(p.decode!.tokensPerSecond)} ${percent(p.decode!.efficiency)}`,
      gb(p.peakRssBytes),
    ]);
  if (rows.length === 0) return '';
  return [
    'Decoder, one sequence: tokens/s (median), % of the GEMM ceiling (prefill) or of the read bandwidth (decode)',
    formatTable(['case', 'prompt', 'prefill tok/s', 'decode tok/s', 'peak RSS'], rows),
  ].join('\n');
}

export function batchText(b: BatchSummary): string {
  return [
    `Batched decode (${b.variant}, quantize ${b.quantize}, ${b.prefixTokens}-token prefixes, ${b.steps} steps; peak RSS ${gb(b.peakRssBytes)})`,
    formatTable(
      ['batch', 'tok/s', 'ms/step', 'experts/layer', 'read/step', '% of bandwidth', 'tok/s at bandwidth', 'peak RSS'],
      b.rows.map((r) => [
        String(r.batch),
        fixed(r.tokensPerSecond),
        fixed(r.msPerStep),
        fixed(r.distinctExperts),
        gb(r.bytesPerStep),
        percent(r.efficiency),
        fixed(r.ceilingTokensPerSecond),
        gb(r.peakRssBytes),
      ]),
    ),
  ].join('\n');
}

export function accuracyText(answers: readonly AccuracyAnswer[]): string {
  if (answers.length === 0) return '';
  const exp = (value: number) => value.toExponential(1);
  return [
    'Accuracy of --precision fast against exact (same checkpoint, same page)',
    formatTable(
      ['case', 'vision rel. error', 'worst row cosine', 'prefill logits rel. error', 'greedy ids equal'],
      answers.map((a) => [a.caseId, exp(a.embedRelativeError), `1 - ${exp(1 - a.embedCosine)}`, exp(a.logitRelativeError), `${a.agreeingSteps} of ${a.steps}`]),
    ),
  ].join('\n');
}

export function latencyText(latency: readonly LatencySummary[], plotFile: string): string {
  const rows = latency.flatMap((l) =>
    l.points.map((p) => [`${l.variant} (prefix ${l.prefixTokens})`, String(p.generated), fixed(p.ms), fixed(p.ceilingMs), percent(p.efficiency)]),
  );
  return [
    `Decode latency against generated length (median of the 32 steps up to each length; plot: ${plotFile})`,
    formatTable(['variant', 'generated', 'ms/step', 'ms at bandwidth', '% of bandwidth'], rows),
  ].join('\n');
}
