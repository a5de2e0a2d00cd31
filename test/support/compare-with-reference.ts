// Native engine vs the float64 reference on one prompt: prefill logits within 1e-3 (or the tolerance
// given) of the largest logit; greedy ids identical up to the first step whose reference top-2 gap is
// below that tolerance; then, teacher-forced on the reference ids for all steps, every unambiguous step picks
// the reference's token and every step's top logit agrees within the tolerance, and so does the chosen
// token's log-probability, within twice it (a log-softmax moves by at most twice its logits' largest error):
// from the native head's streamed log-sum-exp, and in float64 from the logits that came back.
import assert from 'node:assert/strict';

import { generate } from '../../src/engine/generate.js';
import type { NativeModel } from '../../src/engine/native-model.js';
import type { GreedyResult } from '../reference/reference-generate.js';

export const RELATIVE_TOLERANCE = 1e-3;

export function maxAbs(values: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < values.length; i++) m = Math.max(m, Math.abs(values[i]));
  return m;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length, 'compared arrays differ in length');
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

export interface DecodingComparison {
  prefillError: number;
  /** prefillError over the largest reference logit. */
  prefillRelativeError: number;
  /** Absolute tolerances: of the prefill logits, and of every step's top logit (also the near-tie gap). */
  tolerance: number;
  stepTolerance: number;
  /** Near-tie steps: teacher forcing skips their argmax check. */
  nearTies: number;
  /** Leading free-running steps whose ids equal the reference's. */
  freeAgreeingSteps: number;
  /** Largest |log-probability − the reference's| over the unambiguous steps, of the native head's and of the returned logits'. */
  logprobError: { streamed: number; fromLogits: number };
}

/** One line for the test log: the measured errors beside their tolerance. */
export function describeComparison(c: DecodingComparison): string {
  return (
    `prefill logits max abs error ${c.prefillError.toExponential(2)} (${c.prefillRelativeError.toExponential(2)} of the largest; tolerance ${c.tolerance.toExponential(2)}); ` +
    `free-running ids equal for ${c.freeAgreeingSteps} steps; ${c.nearTies} near-tie steps (step tolerance ${c.stepTolerance.toExponential(2)}); ` +
    `log-probabilities off by ${c.logprobError.streamed.toExponential(2)} (head) and ${c.logprobError.fromLogits.toExponential(2)} (from logits)`
  );
}

/** Tolerances relative to the largest reference prefill logit. */
export interface LogitTolerances {
  prefill: number;
  /** Every decode step's top logit; also, times nearTieGaps, the top-2 gap below which a step is a near tie. */
  steps: number;
  /** Default 1: a near tie is a top-2 gap below the step tolerance. */
  nearTieGaps?: number;
}

/**
 * Compares against a greedy reference run (greedyReference with topk 2) at `relative` tolerances;
 * one reference run can serve several native models.
 */
export async function compareDecoding(
  native: NativeModel,
  expected: GreedyResult,
  promptIds: number[],
  embeds: { rows: Int32Array; values: Float32Array } | undefined,
  relative: LogitTolerances,
): Promise<DecodingComparison> {
  const steps = expected.ids.length;
  const tolerance = relative.prefill * maxAbs(expected.prefillLogits);
  const stepTolerance = relative.steps * maxAbs(expected.prefillLogits);
  const [free, forced, streamed] = await generate(native, [
    { promptIds, embeds, maxNewTokens: steps, stopAtEos: false, keepPrefillLogits: true, recordTopK: 2 },
    { promptIds, embeds, maxNewTokens: steps, forceIds: expected.ids, recordTopK: 2 },
    // No processor: the native head returns the argmax and its log-probability, no logits.
    { promptIds, embeds, maxNewTokens: steps, forceIds: expected.ids },
  ]);

  const prefillError = maxAbsDiff(free.prefillLogits!, expected.prefillLogits);
  assert.ok(prefillError <= tolerance, `prefill logits: max abs error ${prefillError} > ${tolerance}`);

  const gap = (step: number) => expected.topk[step].logits[0] - expected.topk[step].logits[1];
  const nearTie = (step: number) => gap(step) < (relative.nearTieGaps ?? 1) * stepTolerance;
  const firstTie = expected.topk.findIndex((_, step) => nearTie(step));
  const agreeUntil = firstTie === -1 ? steps : firstTie;
  assert.deepEqual(free.ids.slice(0, agreeUntil), expected.ids.slice(0, agreeUntil), 'free-running greedy ids');

  let nearTies = 0;
  const logprobError = { streamed: 0, fromLogits: 0 };
  for (let step = 0; step < steps; step++) {
    const topError = Math.abs(forced.topk[step].logits[0] - expected.topk[step].logits[0]);
    assert.ok(topError <= stepTolerance, `step ${step}: top logit off by ${topError} > ${stepTolerance}`);
    if (nearTie(step)) {
      nearTies++;
      continue;
    }
    assert.equal(forced.chosen[step], expected.ids[step], `step ${step}: teacher-forced argmax`);
    assert.equal(streamed.chosen[step], expected.ids[step], `step ${step}: teacher-forced argmax of the native head`);
    for (const [run, result] of [['streamed', streamed], ['fromLogits', forced]] as const) {
      const error = Math.abs(result.logprobs[step] - expected.logprobs[step]);
      assert.ok(error <= 2 * stepTolerance, `step ${step}: log-probability (${run}) off by ${error} > ${2 * stepTolerance}`);
      logprobError[run] = Math.max(logprobError[run], error);
    }
  }
  const freeAgreement = free.ids.findIndex((id, step) => id !== expected.ids[step]);
  return {
    prefillError,
    prefillRelativeError: prefillError / maxAbs(expected.prefillLogits),
    tolerance,
    stepTolerance,
    nearTies,
    freeAgreeingSteps: freeAgreement === -1 ? steps : freeAgreement,
    logprobError,
  };
}
