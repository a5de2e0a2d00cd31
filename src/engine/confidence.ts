// Confidence of OCR output from the model's own token probabilities (docs/engine.md "Confidence"):
// where each generated token's text lies in the decoded output, the tokens of a span of that output
// (a page, a grounded block, a paragraph), their mean and lowest probability, and a document's
// summary over its pages. Pure functions over numbers and strings.

/** Mean and lowest probability (0..1) of a set of tokens' greedy choices. */
export interface Confidence {
  mean: number;
  min: number;
}

/** [start, end) in UTF-16 code units of a decoded text. */
export interface TextSpan {
  start: number;
  end: number;
}

/**
 * Bytes the stream ends with that start a UTF-8 character still missing its continuation bytes: what
 * a streaming UTF-8 decoder holds back. `tail` is the stream's last (up to) 3 bytes.
 */
function heldBytes(tail: readonly number[]): number {
  for (let k = 1; k <= tail.length; k++) {
    const byte = tail[tail.length - k];
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > k ? k : 0;
  }
  return 0;
}

/**
 * Each token's span in the text that decoding all of them gives (Tokenizer.decode: the tokens'
 * bytes joined and read as UTF-8), from the bytes of each token in order. A token covers every
 * character its bytes are part of, so the tokens of a character split over several tokens all cover
 * it; a token without bytes covers nothing. Spans are ordered: starts and ends never decrease.
 */
export function tokenTextSpans(tokenBytes: readonly Uint8Array[]): TextSpan[] {
  const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
  const spans: TextSpan[] = [];
  const holds: boolean[] = [];
  let text = '';
  let tail: number[] = [];
  for (const bytes of tokenBytes) {
    const start = text.length;
    text += utf8.decode(bytes, { stream: true });
    tail = [...tail, ...bytes.subarray(Math.max(0, bytes.length - 3))].slice(-3);
    spans.push({ start, end: text.length });
    holds.push(bytes.length > 0 && heldBytes(tail) > 0);
  }
  text += utf8.decode();
  // A token that leaves bytes held also covers the character they begin, emitted after it.
  spans.forEach((span, i) => {
    if (holds[i] && span.end < text.length) span.end += text.codePointAt(span.end)! > 0xffff ? 2 : 1;
  });
  return spans;
}

/** The indices of the tokens whose spans overlap `span` (tokenSpans ordered, as tokenTextSpans makes them). */
export function tokensIn(tokenSpans: readonly TextSpan[], span: TextSpan): number[] {
  let lo = 0;
  let hi = tokenSpans.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tokenSpans[mid].end > span.start) hi = mid;
    else lo = mid + 1;
  }
  const tokens: number[] = [];
  for (let i = lo; i < tokenSpans.length && tokenSpans[i].start < span.end; i++) {
    if (tokenSpans[i].end > tokenSpans[i].start && tokenSpans[i].end > span.start) tokens.push(i);
  }
  return tokens;
}

/**
 * Mean and lowest probability of the tokens at `indices` (all tokens when omitted), from their
 * natural-log probabilities. No tokens gives 0 for both: nothing was read with any confidence.
 */
export function confidenceOf(logprobs: readonly number[], indices?: readonly number[]): Confidence {
  const chosen = indices ?? logprobs.map((_, i) => i);
  if (chosen.length === 0) return { mean: 0, min: 0 };
  let sum = 0;
  let min = 1;
  for (const i of chosen) {
    const probability = Math.exp(logprobs[i]);
    sum += probability;
    min = Math.min(min, probability);
  }
  return { mean: sum / chosen.length, min };
}

/** The confidence of the tokens whose text overlaps `span` of the decoded output. */
export function spanConfidence(logprobs: readonly number[], tokenSpans: readonly TextSpan[], span: TextSpan): Confidence {
  return confidenceOf(logprobs, tokensIn(tokenSpans, span));
}

/** A document's confidence over its pages read. */
export interface DocumentConfidence {
  /** The mean of the pages' mean confidences, each page counting once. */
  mean: number;
  /** Pages by mean confidence in 10 bins: [0, 0.1), [0.1, 0.2), … [0.9, 1]. */
  histogram: number[];
  /** Up to 10 pages, lowest mean first (lower page number first on ties). */
  leastConfident: Array<{ page: number; mean: number; min: number }>;
}

export const HISTOGRAM_BINS = 10;
export const LEAST_CONFIDENT_PAGES = 10;

/** The document's confidence from its pages' (page number, confidence); null when there are none. */
export function documentConfidence(pages: ReadonlyArray<{ page: number; confidence: Confidence }>): DocumentConfidence | null {
  if (pages.length === 0) return null;
  const histogram = new Array<number>(HISTOGRAM_BINS).fill(0);
  for (const { confidence } of pages) histogram[Math.min(HISTOGRAM_BINS - 1, Math.floor(confidence.mean * HISTOGRAM_BINS))] += 1;
  const leastConfident = [...pages]
    .sort((a, b) => a.confidence.mean - b.confidence.mean || a.page - b.page)
    .slice(0, LEAST_CONFIDENT_PAGES)
    .map(({ page, confidence }) => ({ page, mean: confidence.mean, min: confidence.min }));
  const mean = pages.reduce((sum, { confidence }) => sum + confidence.mean, 0) / pages.length;
  return { mean, histogram, leastConfident };
}
