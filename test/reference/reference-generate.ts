// Reference generation: pure greedy decoding over the reference decoder, and the sliding-window
// no-repeat-n-gram rule of docs/model.md §10.2.

import type { EmbeddingOverride, ReferenceDecoder } from './reference-decoder.js';
import { argmax, logSoftmaxAt, topK } from './reference-math.js';

export interface GreedyOptions {
  forceIds?: number[]; // teacher forcing: after step i feed forceIds[i] instead of the argmax (length ≥ steps − 1)
  embeds?: EmbeddingOverride; // rows replacing prompt embeddings in the prefill
  topk?: number; // how many best candidates to report per step; default 5
  keepStepLogits?: boolean; // also return every step's logits (steps × vocab float64: large on real vocabularies)
}

/** The best candidates of one step, best first (lower id first on ties). */
export interface TopCandidates {
  ids: number[];
  logits: number[];
}

export interface GreedyResult {
  prefillLogits: Float64Array; // [vocab], logits after the prompt
  ids: number[]; // [steps], argmax of each step's logits
  logprobs: number[]; // [steps], the log-softmax of each step's logits at its argmax
  stepLogits?: Float64Array[]; // [steps][vocab], with keepStepLogits; stepLogits[0] = prefillLogits
  topk: TopCandidates[]; // [steps]
}

/**
 * Greedy decoding for exactly `steps` tokens (EOS does not stop it): step 0 reads the prefill logits, step i > 0
 * the logits after feeding step i−1's token (its argmax, or forceIds[i−1]). The last token is not fed.
 */
export function greedyReference(
  decoder: ReferenceDecoder,
  promptIds: number[],
  steps: number,
  opts: GreedyOptions = {},
): GreedyResult {
  const { forceIds, embeds, topk = 5, keepStepLogits = false } = opts;
  if (forceIds !== undefined && forceIds.length < steps - 1) {
    throw new Error(`forceIds holds ${forceIds.length} ids; ${steps} steps feed ${steps - 1}`);
  }
  const sequence = decoder.newSequence();
  const prefillLogits = sequence.forward(promptIds, embeds);
  const result: GreedyResult = { prefillLogits, ids: [], logprobs: [], topk: [], ...(keepStepLogits ? { stepLogits: [] } : {}) };
  let logits = prefillLogits;
  for (let step = 0; step < steps; step++) {
    if (step > 0) logits = sequence.forward([forceIds?.[step - 1] ?? result.ids[step - 1]]);
    const best = topK(logits, topk);
    result.ids.push(argmax(logits));
    result.logprobs.push(logSoftmaxAt(logits, result.ids[step]));
    result.topk.push({ ids: best, logits: best.map((id) => logits[id]) });
    result.stepLogits?.push(logits);
  }
  return result;
}

/**
 * Ids banned by the sliding-window no-repeat-n-gram processor (§10.2) for the next token after `tokens`:
 * every s[i+n−1] whose s[i…i+n−2] equals the last n−1 tokens, for starts i in [max(0, len − window), len − n],
 * minus the whitelist. Empty when len < n.
 */
export function slidingNoRepeatNgramBans(tokens: number[], n: number, window: number, whitelist: Set<number>): Set<number> {
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`n-gram size must be a positive integer, got ${n}`);
  const banned = new Set<number>();
  const length = tokens.length;
  if (length < n) return banned;
  const prefix = tokens.slice(length - (n - 1));
  for (let i = Math.max(0, length - window); i <= length - n; i++) {
    if (prefix.every((token, j) => tokens[i + j] === token)) banned.add(tokens[i + n - 1]);
  }
  for (const id of whitelist) banned.delete(id);
  return banned;
}
