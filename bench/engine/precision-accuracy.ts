// How far fast precision lands from exact: the measures the benchmark reports on full-size
// checkpoints and the tests bound against the float64 reference on tiny ones.

/** ‖a − b‖₂ / ‖b‖₂ and the smallest cosine between rows of `width` values; b is the baseline. */
export function embedAgreement(a: ArrayLike<number>, b: ArrayLike<number>, width: number): { relativeError: number; cosine: number } {
  if (a.length !== b.length) throw new Error(`compared embeddings differ in length: ${a.length} and ${b.length}`);
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

/** max |a − b| over max |b|. */
export function maxRelativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let largest = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    largest = Math.max(largest, Math.abs(b[i]));
  }
  return diff / largest;
}

/** Leading positions where the two id lists agree. */
export function agreeingPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}
