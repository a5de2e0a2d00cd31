// Confidence from token probabilities: where tokens' text lies in the decoded output (characters
// split over tokens included), the tokens of a block or paragraph, and the page and document summaries.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { confidenceOf, documentConfidence, spanConfidence, tokensIn, tokenTextSpans, type TextSpan } from '../../src/engine/confidence.js';
import { parsePageOutput } from '../../src/engine/ocr-postprocess.js';

const A4 = { width: 1241, height: 1754 };
const bytes = (...values: number[]) => Uint8Array.from(values);
const utf8 = (text: string) => new TextEncoder().encode(text);

describe('tokenTextSpans', () => {
  test('whole characters: each token spans the text it decodes to', () => {
    assert.deepEqual(tokenTextSpans([utf8('He'), utf8('llo'), utf8(' w')]), [
      { start: 0, end: 2 },
      { start: 2, end: 5 },
      { start: 5, end: 7 },
    ]);
  });

  test('a character split over tokens is covered by each of them', () => {
    // 'a', then 'é' (C3 A9) split, its second byte beside 'b'.
    assert.deepEqual(tokenTextSpans([utf8('a'), bytes(0xc3), bytes(0xa9, 0x62)]), [
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 1, end: 3 },
    ]);
  });

  test('a token that ends one character and begins the next covers both', () => {
    // '中文' = E4 B8 AD | E6 96 87, cut as [E4 B8] [AD E6] [96 87].
    assert.deepEqual(tokenTextSpans([bytes(0xe4, 0xb8), bytes(0xad, 0xe6), bytes(0x96, 0x87)]), [
      { start: 0, end: 1 },
      { start: 0, end: 2 },
      { start: 1, end: 2 },
    ]);
  });

  test('a character outside the BMP spans its two UTF-16 units', () => {
    // U+1F600 = F0 9F 98 80, one byte per token, then 'x'.
    assert.deepEqual(tokenTextSpans([bytes(0xf0), bytes(0x9f), bytes(0x98), bytes(0x80), utf8('x')]), [
      { start: 0, end: 2 },
      { start: 0, end: 2 },
      { start: 0, end: 2 },
      { start: 0, end: 2 },
      { start: 2, end: 3 },
    ]);
  });

  test('an unfinished last character (U+FFFD in the text) is its token\'s; a token without bytes covers nothing', () => {
    const spans = tokenTextSpans([utf8('a'), new Uint8Array(0), bytes(0xe4)]);
    assert.deepEqual(spans, [
      { start: 0, end: 1 },
      { start: 1, end: 1 },
      { start: 1, end: 2 },
    ]);
    assert.deepEqual(tokensIn(spans, { start: 0, end: 2 }), [0, 2]);
  });
});

describe('tokensIn', () => {
  const spans: TextSpan[] = [
    { start: 0, end: 3 },
    { start: 3, end: 5 },
    { start: 3, end: 6 },
    { start: 6, end: 9 },
  ];

  test('takes every token overlapping the span, and no token that only touches it', () => {
    assert.deepEqual(tokensIn(spans, { start: 3, end: 6 }), [1, 2]);
    assert.deepEqual(tokensIn(spans, { start: 4, end: 7 }), [1, 2, 3]);
    assert.deepEqual(tokensIn(spans, { start: 0, end: 1 }), [0]);
    assert.deepEqual(tokensIn(spans, { start: 9, end: 12 }), []);
  });
});

describe('confidenceOf', () => {
  test('mean and lowest probability of the chosen tokens', () => {
    const logprobs = [Math.log(0.5), Math.log(0.25), 0, Math.log(0.75)];
    const all = confidenceOf(logprobs);
    assert.ok(Math.abs(all.mean - 2.5 / 4) < 1e-12, `mean ${all.mean}`);
    assert.ok(Math.abs(all.min - 0.25) < 1e-12, `min ${all.min}`);
    const some = confidenceOf(logprobs, [2, 3]);
    assert.ok(Math.abs(some.mean - 0.875) < 1e-12 && Math.abs(some.min - 0.75) < 1e-12, JSON.stringify(some));
  });

  test('no tokens: 0', () => {
    assert.deepEqual(confidenceOf([]), { mean: 0, min: 0 });
    assert.deepEqual(confidenceOf([0], []), { mean: 0, min: 0 });
  });
});

describe('blocks and paragraphs of a page get the confidence of their tokens', () => {
  // The decoded output as tokens (text pieces and raw bytes), and each token's probability.
  const tokens: Array<[Uint8Array, number]> = [
    [utf8('<|det|>title [1, 2, 3, 4]<|/det|>'), 0.9],
    [utf8('# Ti'), 0.8],
    [utf8('tle\n\n'), 0.7],
    [utf8('<|det|>text [1, x, 3, 4]<|/det|>'), 0.6], // coordinates that do not parse: a block without a box
    [utf8('Caf'), 0.5],
    [bytes(0xc3), 0.4], // 'é' split over two tokens
    [bytes(0xa9), 0.3],
    [utf8('<｜end▁of▁sentence｜>'), 0.95],
  ];
  const output = new TextDecoder().decode(Buffer.concat(tokens.map(([b]) => b)));
  const spans = tokenTextSpans(tokens.map(([b]) => b));
  const logprobs = tokens.map(([, p]) => Math.log(p));
  const page = parsePageOutput(output, A4);
  const confidence = (span: TextSpan) => spanConfidence(logprobs, spans, span);
  const expect = (probabilities: number[]) => ({
    mean: probabilities.reduce((a, b) => a + b, 0) / probabilities.length,
    min: Math.min(...probabilities),
  });
  const close = (got: { mean: number; min: number }, want: { mean: number; min: number }, what: string) =>
    assert.ok(Math.abs(got.mean - want.mean) < 1e-12 && Math.abs(got.min - want.min) < 1e-12, `${what}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);

  test('a block takes its tag and content tokens, the tokens of a split character included', () => {
    assert.equal(page.blocks[1].box, undefined);
    assert.equal(page.blocks[1].text, 'Café');
    close(confidence(page.blocks[0].span), expect([0.9, 0.8, 0.7]), 'title block');
    close(confidence(page.blocks[1].span), expect([0.6, 0.5, 0.4, 0.3]), 'block without a box');
  });

  test('a paragraph takes the tokens of its text; the page takes every token, the final EOS included', () => {
    assert.deepEqual(page.paragraphs.map((p) => p.text), ['# Title', 'Café']);
    close(confidence(page.paragraphs[0].span), expect([0.8, 0.7]), 'first paragraph');
    close(confidence(page.paragraphs[1].span), expect([0.5, 0.4, 0.3]), 'second paragraph');
    close(confidence(page.span), expect(tokens.map(([, p]) => p)), 'page');
  });
});

describe('documentConfidence', () => {
  const page = (n: number, mean: number) => ({ page: n, confidence: { mean, min: mean / 2 } });

  test('mean of the page means, a 10-bin histogram with 1 in the last bin, the least confident pages first', () => {
    const pages = [page(1, 0.95), page(2, 0.1), page(3, 1), page(4, 0.05), page(5, 0.55), page(6, 0.1)];
    const document = documentConfidence(pages)!;
    assert.ok(Math.abs(document.mean - 2.75 / 6) < 1e-12, `mean ${document.mean}`);
    assert.deepEqual(document.histogram, [1, 2, 0, 0, 0, 1, 0, 0, 0, 2]);
    assert.deepEqual(document.leastConfident.map((p) => p.page), [4, 2, 6, 5, 1, 3]);
    assert.deepEqual(document.leastConfident[0], { page: 4, mean: 0.05, min: 0.025 });
  });

  test('at most 10 least confident pages', () => {
    const pages = Array.from({ length: 12 }, (_, i) => page(i + 1, 1 - i / 20));
    assert.deepEqual(documentConfidence(pages)!.leastConfident.map((p) => p.page), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
  });

  test('no page with a confidence: null', () => {
    assert.equal(documentConfidence([]), null);
  });
});
