// What each --precision mode must reach against the float64 reference (docs/model.md §12), and the
// measures of the vision embeddings they bound.
import assert from 'node:assert/strict';

import type { Precision } from '../../src/engine/precision.js';
import { RELATIVE_TOLERANCE } from './compare-with-reference.js';

export const PRECISIONS: readonly Precision[] = ['exact', 'fast'];

export interface PrecisionBounds {
  /** Largest ‖native − ref‖₂ / ‖ref‖₂ over the assembled vision embeddings. */
  embedRelativeError: number;
  /** Smallest cosine between a native and a reference embedding row. */
  embedCosine: number;
  /** Largest prefill-logit error over the largest reference logit; also the near-tie gap of greedy decoding. */
  logitRelativeError: number;
}

// Measured on the tiny checkpoints (avx512bf16): exact about 6e-6 / 1 − 3e-11 / 5e-6; fast, whose
// activations carry one BF16 rounding (2⁻⁹ relative) into every product, about 4e-3 / 1 − 2e-5 / 3e-3.
export const PRECISION_BOUNDS: Record<Precision, PrecisionBounds> = {
  exact: { embedRelativeError: 1e-4, embedCosine: 1 - 1e-8, logitRelativeError: RELATIVE_TOLERANCE },
  fast: { embedRelativeError: 1e-2, embedCosine: 1 - 1e-4, logitRelativeError: 1e-2 },
};

export interface EmbedAgreement {
  relativeError: number;
  cosine: number;
}

/** ‖a − b‖₂ / ‖b‖₂ and the smallest cosine between rows of `width` values. */
export function embedAgreement(a: ArrayLike<number>, b: ArrayLike<number>, width: number): EmbedAgreement {
  assert.equal(a.length, b.length, 'compared embeddings differ in length');
  let diff = 0;
  let norm = 0;
  let cosine = 1;
  for (let row = 0; row < a.length; row += width) {
    let dot = 0;
    let aa = 0;
    let bb = 0;
    for (let i = row; i < row + width; i++) {
      diff += (a[i] - b[i]) ** 2;
      dot += a[i] * b[i];
      aa += a[i] * a[i];
      bb += b[i] * b[i];
    }
    norm += bb;
    cosine = Math.min(cosine, dot / Math.sqrt(aa * bb));
  }
  return { relativeError: Math.sqrt(diff / norm), cosine };
}

/** Fails when the embeddings are worse than the mode's bounds. */
export function assertEmbedsWithin(agreement: EmbedAgreement, precision: Precision): void {
  const bounds = PRECISION_BOUNDS[precision];
  assert.ok(agreement.relativeError <= bounds.embedRelativeError, `${precision}: vision embeddings relative error ${agreement.relativeError} > ${bounds.embedRelativeError}`);
  assert.ok(agreement.cosine >= bounds.embedCosine, `${precision}: worst vision embedding cosine ${agreement.cosine} < ${bounds.embedCosine}`);
}
