// Loops in generated token ids: a span of tokens repeated back to back many times, as a model stuck on
// a table cell, a table row or a line writes it again and again until its token budget runs out. Run
// once per page on its generated ids, in a page thread (page-cpu-pool.ts); pages with a loop are
// flagged for review (docs/operations.md "Page flags").
//
// A loop is a span of at least minSpanTokens tokens repeated back to back at least minRepeats times
// within the last windowTokens tokens. A shorter period counts through its multiples: `<td></td>`
// (2 tokens) written 100 times is a 20-token span repeated 10 times. Only exact repeats count: rows
// that differ in one token (numbered rows, a count that goes up) are no loop.
//
// The defaults, from what loops look like: a loop runs until the token limit, hundreds to thousands of
// tokens of the same span (the official decoding's n-gram blocker forbids short exact loops, except of
// the whitelisted `<td>`/`</td>`, so real loops are a run of empty cells or spans of 60 tokens and more:
// table rows, lines, paragraphs). Legitimate repeats are short: a table's identical rows a few times, a
// dot leader or a separator line of a few dozen tokens. Ten repeats of at least 20 tokens (200 tokens
// at least) keeps up to nine identical rows of any length and any run of under 200 identical tokens
// unflagged, while a loop that runs to the limit repeats far more than ten times. The window (16,384
// tokens: all of a V1/V2 page's budget, half of V3's) finds loops of spans up to 1,638 tokens.

export interface Repetition {
  /** Index in the generated ids where the loop starts. */
  start: number;
  /** The repeated span's length in tokens: the loop's shortest period. */
  span: number;
  /** How many whole copies of the span follow each other. */
  repeats: number;
}

export interface RepetitionThresholds {
  /** The shortest span a loop repeats (a shorter period counts through its multiples). */
  minSpanTokens: number;
  /** The fewest copies of the span back to back. */
  minRepeats: number;
  /** Only the last this many tokens are searched. */
  windowTokens: number;
}

export const DEFAULT_REPETITION_THRESHOLDS: RepetitionThresholds = { minSpanTokens: 20, minRepeats: 10, windowTokens: 16_384 };

/**
 * The loop with the shortest span in the last `windowTokens` of `ids`, or undefined. For each period p
 * (shortest first) only every p-th position is a starting point, and a run found is extended token by
 * token and skipped past: about windowTokens × ln(windowTokens / minRepeats) comparisons on text
 * (about 1 ms for 16,384 tokens), more where long runs of one token fill the window, as many as
 * windowTokens per period at worst (tens of milliseconds).
 */
export function findRepetition(ids: ArrayLike<number>, thresholds: RepetitionThresholds = DEFAULT_REPETITION_THRESHOLDS): Repetition | undefined {
  const { minSpanTokens, minRepeats, windowTokens } = thresholds;
  const end = ids.length;
  const base = Math.max(0, end - windowTokens);
  for (let period = 1; period * minRepeats <= end - base; period++) {
    // The tokens a loop of this period covers at least: minRepeats copies of its shortest multiple of at least minSpanTokens.
    const needed = minRepeats * period * Math.ceil(minSpanTokens / period);
    if (needed > end - base) continue;
    let coveredUntil = base;
    for (let sample = base; sample + period < end; sample += period) {
      if (sample < coveredUntil || ids[sample] !== ids[sample + period]) continue;
      // ids[i] === ids[i + period] for every i in [from, to): the tokens [from, to + period) repeat with this period.
      let from = sample;
      while (from > base && ids[from - 1] === ids[from - 1 + period]) from--;
      let to = sample + 1;
      while (to + period < end && ids[to] === ids[to + period]) to++;
      coveredUntil = to;
      const length = to + period - from;
      if (length >= needed) return { start: from, span: period, repeats: Math.floor(length / period) };
    }
  }
  return undefined;
}
