// The side-by-side comparison with the peer: medians of the interleaved runs and, per stage, how
// many times longer the peer takes than our engine (peer ÷ ours; above 1 means we are faster).
import type { PeerAnswer, PeerMode } from './measure-jobs.js';
import type { PageStageMs } from './peer-profile.js';
import { fixed, formatTable } from './report-table.js';
import { median } from './stats.js';

/** One page read: stage milliseconds, decode per forward call after the prefill. */
export interface StageFigures {
  encodeMs: number;
  prefillMs: number;
  decodeMsPerToken: number;
  totalMs: number;
}

export interface PeerComparisonRow extends PeerMode {
  /** The peer's setting compared with this mode: BF16 experts, or its 8-bit experts (--int4). */
  peerInt8: boolean;
  runs: number;
  /** Medians over the runs. */
  peer: StageFigures;
  ours: StageFigures;
  /** Per stage, the median over the runs of peer ÷ ours within each run. */
  ratio: StageFigures;
  /** Every run, in order: the peer's and ours of the same round side by side. */
  peerRuns: StageFigures[];
  oursRuns: StageFigures[];
}

export interface PeerComparison {
  caseId: string;
  tokens: number;
  promptTokens: { ours: number; peer?: number };
  rows: PeerComparisonRow[];
}

const STAGES: readonly (keyof StageFigures)[] = ['encodeMs', 'prefillMs', 'decodeMsPerToken', 'totalMs'];

function stageFigures(sample: PageStageMs, tokens: number): StageFigures {
  return { encodeMs: sample.encodeMs, prefillMs: sample.prefillMs, decodeMsPerToken: sample.decodeMs / (tokens - 1), totalMs: sample.totalMs };
}

function medians(samples: readonly StageFigures[]): StageFigures {
  return Object.fromEntries(STAGES.map((stage) => [stage, median(samples.map((s) => s[stage]))])) as unknown as StageFigures;
}

/** The answers of one page's measuring processes (one per mode) as one answer. */
export function mergePeerAnswers(answers: PeerAnswer[]): PeerAnswer {
  if (answers.length === 0) throw new Error('no answers to merge');
  return { ...answers[0], peer: answers.flatMap((a) => a.peer), ours: answers.flatMap((a) => a.ours) };
}

export function summarisePeer(answer: PeerAnswer): PeerComparison {
  const rows = answer.ours.map((mode): PeerComparisonRow => {
    const peerInt8 = mode.quantize === 'int8';
    const peerRuns = answer.peer.find((p) => p.int8 === peerInt8)?.runs;
    if (!peerRuns || peerRuns.length !== mode.runs.length) {
      throw new Error(`${answer.caseId}: ${mode.runs.length} runs of ours with --quantize ${mode.quantize} but ${peerRuns?.length ?? 0} of the peer to compare them with`);
    }
    const peer = peerRuns.map((run) => stageFigures(run, answer.tokens));
    const ours = mode.runs.map((run) => stageFigures(run, answer.tokens));
    const ratios = peer.map(
      (p, i) => Object.fromEntries(STAGES.map((stage) => [stage, p[stage] / ours[i][stage]])) as unknown as StageFigures,
    );
    return {
      precision: mode.precision,
      quantize: mode.quantize,
      peerInt8,
      runs: ours.length,
      peer: medians(peer),
      ours: medians(ours),
      ratio: medians(ratios),
      peerRuns: peer,
      oursRuns: ours,
    };
  });
  return { caseId: answer.caseId, tokens: answer.tokens, promptTokens: { ours: answer.promptTokens, peer: answer.peer[0]?.runs[0]?.promptTokens }, rows };
}

export function peerText(comparisons: readonly PeerComparison[]): string {
  if (comparisons.length === 0) return '';
  const cell = (row: PeerComparisonRow, stage: keyof StageFigures) => `${fixed(row.peer[stage])} / ${fixed(row.ours[stage])}  ${row.ratio[stage].toFixed(2)}×`;
  const rows = comparisons.flatMap((c) =>
    c.rows.map((row) => [
      c.caseId,
      `${row.precision}${row.quantize === 'int8' ? ' + int8' : ''}`,
      row.peerInt8 ? '--int4' : 'bf16',
      `${c.promptTokens.peer ?? '?'} / ${c.promptTokens.ours}`,
      String(row.runs),
      cell(row, 'encodeMs'),
      cell(row, 'prefillMs'),
      cell(row, 'decodeMsPerToken'),
      cell(row, 'totalMs'),
    ]),
  );
  return [
    `Side by side with the peer (ds-ocr), same checkpoint, page and generated tokens (${comparisons[0].tokens}), runs interleaved:`,
    'median ms peer / ours, then peer ÷ ours (the median of the runs\' ratios; above 1: ours is faster)',
    formatTable(['case', 'ours', 'peer', 'prompt', 'runs', 'encode ms', 'prefill ms', 'decode ms/token', 'total ms'], rows),
  ].join('\n');
}
