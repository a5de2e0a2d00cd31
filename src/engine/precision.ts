// How the engine's products with BF16 weights treat their F32 activations (`--precision`):
//   exact: near-F32 activations (two BF16 dot products per product on avx512bf16): what every
//          comparison with the float64 reference uses.
//   fast:  activations rounded once to BF16 in the encoders' and the decoder's products (one BF16
//          dot product per product); the vocabulary head stays exact. Only avx512bf16 has a faster
//          product for it; the other kernel sets run fast exactly as exact. On a GPU the portable
//          shaders round to BF16 in the same products, the cooperative-matrix shader to FP16.
// Its measured accuracy and speed are in docs/model.md ("Tolerances") and bench/RESULTS.md.

export type Precision = 'exact' | 'fast';

export const PRECISION_CHOICES: readonly Precision[] = ['exact', 'fast'];

/** What a model loads with when none is named: the one the reference comparisons use. */
export const ENGINE_DEFAULT_PRECISION: Precision = 'exact';

/**
 * What the engine-running commands (ocr, run, work, generate) use without --precision, chosen by the
 * encoder speed-up and accuracy measured in `npm run bench`; `debug dump` keeps exact.
 */
export const COMMAND_DEFAULT_PRECISION: Precision = 'fast';

export function parsePrecision(text: string): Precision {
  const precision = PRECISION_CHOICES.find((choice) => choice === text);
  if (!precision) throw new Error(`--precision must be ${PRECISION_CHOICES.join(' or ')} (got "${text}")`);
  return precision;
}
