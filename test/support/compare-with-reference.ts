// Native engine vs the float64 reference on one prompt: prefill logits within a bound (1e-3) of the largest
// logit; greedy ids identical up to the first step whose reference top-2 gap is below that
// tolerance; then, teacher-forced on the reference ids for all steps, every unambiguous step picks
// the reference's token and every step's top logit agrees within the tolerance.
import assert from 'node:assert/strict';

import { generate } from '../../src/engine/generate.js';
import type { NativeModel } from '../../src/engine/native-model.js';
import type { EmbeddingOverride, ReferenceDecoder } from '../reference/reference-decoder.js';
import { greedyReference } from '../reference/reference-generate.js';

export const RELATIVE_TOLERANCE = 1e-3;

/**
 * Logits within `relative` × the largest reference logit; a step is a near-tie (its argmax not
 * compared) when the reference's top-2 gap is below `nearTieGaps` × that tolerance.
 */
export interface ComparisonBounds {
  relative: number;
  nearTieGaps: number;
}
export const EXACT_BOUNDS: ComparisonBounds = { relative: RELATIVE_TOLERANCE, nearTieGaps: 1 };

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
  tolerance: number;
  /** Steps whose reference top-2 gap was below the tolerance (teacher forcing skips their argmax check). */
  nearTies: number;
  /** Leading free-running steps whose ids equal the reference's. */
  freeAgreeingSteps: number;
}

/** One line for the test log: the measured errors beside their tolerance. */
export function describeComparison(c: DecodingComparison): string {
  return (
    `prefill logits max abs error ${c.prefillError.toExponential(2)} (tolerance ${c.tolerance.toExponential(2)}); ` +
    `free-running ids equal for ${c.freeAgreeingSteps} steps; ${c.nearTies} near-tie steps`
  );
}

export async function compareDecoding(
  native: NativeModel,
  reference: ReferenceDecoder,
  promptIds: number[],
  steps: number,
  embeds?: { native: { rows: Int32Array; values: Float32Array }; reference: EmbeddingOverride },
  bounds: ComparisonBounds = EXACT_BOUNDS,
): Promise<DecodingComparison> {
  const expected = greedyReference(reference, promptIds, steps, { topk: 2, embeds: embeds?.reference });
  const tolerance = bounds.relative * maxAbs(expected.prefillLogits);
  const [free, forced] = await generate(native, [
    { promptIds, embeds: embeds?.native, maxNewTokens: steps, stopAtEos: false, keepPrefillLogits: true, recordTopK: 2 },
    { promptIds, embeds: embeds?.native, maxNewTokens: steps, forceIds: expected.ids, recordTopK: 2 },
  ]);

  const prefillError = maxAbsDiff(free.prefillLogits!, expected.prefillLogits);
  assert.ok(prefillError <= tolerance, `prefill logits: max abs error ${prefillError} > ${tolerance}`);

  const gap = (step: number) => expected.topk[step].logits[0] - expected.topk[step].logits[1];
  const nearTie = (step: number) => gap(step) < bounds.nearTieGaps * tolerance;
  const firstTie = expected.topk.findIndex((_, step) => nearTie(step));
  const agreeUntil = firstTie === -1 ? steps : firstTie;
  assert.deepEqual(free.ids.slice(0, agreeUntil), expected.ids.slice(0, agreeUntil), 'free-running greedy ids');

  let nearTies = 0;
  for (let step = 0; step < steps; step++) {
    const topError = Math.abs(forced.topk[step].logits[0] - expected.topk[step].logits[0]);
    assert.ok(topError <= tolerance, `step ${step}: top logit off by ${topError}`);
    if (nearTie(step)) nearTies++;
    else assert.equal(forced.chosen[step], expected.ids[step], `step ${step}: teacher-forced argmax`);
  }
  const freeAgreement = free.ids.findIndex((id, step) => id !== expected.ids[step]);
  return { prefillError, tolerance, nearTies, freeAgreeingSteps: freeAgreement === -1 ? steps : freeAgreement };
}
