// Token selection over one step's logits[vocab]: the official sliding-window no-repeat-n-gram
// blocker, the repetition penalty, greedy argmax and top-k; and a token's log-probability.

export interface NoRepeatNgramOptions {
  /** n-gram size N: a token that would repeat an N-gram seen in the window is banned. */
  size: number;
  /** Only n-grams starting in the last `window` tokens count. */
  window: number;
  /** Token ids that are never banned (the official scripts whitelist <td>, </td>: 128821, 128822). */
  whitelist?: readonly number[];
}

/**
 * Ids banned at the next step by the sliding-window no-repeat-n-gram rule (docs/model.md §10.2),
 * over `tokens` = the generated tokens so far.
 */
export function noRepeatNgramBans(tokens: readonly number[], options: NoRepeatNgramOptions): Set<number> {
  const { size: n, window } = options;
  const banned = new Set<number>();
  if (n < 1 || tokens.length < n) return banned;
  const prefixStart = tokens.length - (n - 1);
  for (let i = Math.max(0, tokens.length - window); i <= tokens.length - n; i++) {
    let match = true;
    for (let j = 0; j < n - 1 && match; j++) match = tokens[i + j] === tokens[prefixStart + j];
    if (match) banned.add(tokens[i + n - 1]);
  }
  for (const id of options.whitelist ?? []) banned.delete(id);
  return banned;
}

/** HF repetition penalty on every id in `seen`: positive logits divided by p, negative multiplied. */
export function applyRepetitionPenalty(logits: Float32Array, seen: Iterable<number>, penalty: number): void {
  for (const id of new Set(seen)) {
    const value = logits[id];
    logits[id] = value < 0 ? value * penalty : value / penalty;
  }
}

export function banTokens(logits: Float32Array, banned: Iterable<number>): void {
  for (const id of banned) logits[id] = -Infinity;
}

/** Index of the largest logit; the lowest index wins ties. */
export function argmax(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

/**
 * log softmax(logits)[id] in float64: the model's log-probability of `id`, over the whole vocabulary.
 * Given the raw logits, it is what the native head computes beside its argmax (a streamed
 * log-sum-exp), within F32 rounding.
 */
export function logProbability(logits: Float32Array, id: number): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  return logits[id] - max - Math.log(sum);
}

export interface TopK {
  ids: Int32Array; // [k], best first
  logits: Float32Array; // [k]
}

/** The k largest logits, best first (lower id first on ties). */
export function topK(logits: Float32Array, k: number): TopK {
  const ids = new Int32Array(k).fill(-1);
  const values = new Float32Array(k).fill(-Infinity);
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i];
    if (v <= values[k - 1] && ids[k - 1] !== -1) continue;
    let j = k - 1;
    while (j > 0 && (v > values[j - 1] || ids[j - 1] === -1)) {
      values[j] = values[j - 1];
      ids[j] = ids[j - 1];
      j--;
    }
    values[j] = v;
    ids[j] = i;
  }
  return { ids, logits: values };
}
