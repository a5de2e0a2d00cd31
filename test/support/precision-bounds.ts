// What each --precision mode must reach against the float64 reference (docs/model.md §12); the
// measures are the benchmark's own (bench/engine/precision-accuracy.ts).
import assert from 'node:assert/strict';

import { embedAgreement } from '../../bench/engine/precision-accuracy.js';
import type { Precision } from '../../src/engine/precision.js';
import { RELATIVE_TOLERANCE, type LogitTolerances } from './compare-with-reference.js';

export const PRECISIONS: readonly Precision[] = ['exact', 'fast'];

export interface PrecisionBounds {
  /** Largest ‖native − ref‖₂ / ‖ref‖₂ over the assembled vision embeddings. */
  embedRelativeError: number;
  /** Smallest cosine between a native and a reference embedding row. */
  embedCosine: number;
  /** Prefill logits, and every greedy step's top logit (also the near-tie gap), over the largest reference logit. */
  logits: LogitTolerances;
}

// Measured on the tiny checkpoints (avx512bf16): exact about 6e-6 / 1 − 3e-11 / 5e-6 (prefill);
// fast, whose activations carry one BF16 rounding (2⁻⁹ relative) into every product (the attention
// of many queries included), about 4e-3 / 1 − 2e-5 / 3e-3 (4.1e-3 for a text prompt's prefill),
// and its step logits drift further as the cache fills with fast values (1.7e-2 at worst over 200
// teacher-forced steps of a V1 gundam page).
export const PRECISION_BOUNDS: Record<Precision, PrecisionBounds> = {
  exact: { embedRelativeError: 1e-4, embedCosine: 1 - 1e-8, logits: { prefill: RELATIVE_TOLERANCE, steps: RELATIVE_TOLERANCE } },
  fast: { embedRelativeError: 1e-2, embedCosine: 1 - 1e-4, logits: { prefill: 1e-2, steps: 5e-2 } },
};

export type EmbedAgreement = ReturnType<typeof embedAgreement>;

/** Fails when the embeddings are worse than the mode's bounds. */
export function assertEmbedsWithin(agreement: EmbedAgreement, precision: Precision): void {
  const bounds = PRECISION_BOUNDS[precision];
  assert.ok(agreement.relativeError <= bounds.embedRelativeError, `${precision}: vision embeddings relative error ${agreement.relativeError} > ${bounds.embedRelativeError}`);
  assert.ok(agreement.cosine >= bounds.embedCosine, `${precision}: worst vision embedding cosine ${agreement.cosine} < ${bounds.embedCosine}`);
}
