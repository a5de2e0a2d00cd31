// Bench-only preload for `scriptorium work` child processes of the soak: THE ENGINE IS REPLACED BY A
// STATED DELAY. OcrEngine.load returns an engine that loads no weights and reads each batch of
// pages by waiting SCRIPTORIUM_BENCH_DELAY_MS, then answering one line of text per page:
//   node --import ./dist/bench/queue/delay-engine.js dist/src/cli/main.js work --model DIR --variant V …
// Everything around the engine (claims, rendering, storage, assembly, heartbeats) is the product's.
import { OcrEngine, type PageResult } from '../../src/engine/ocr-engine.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';

const delayMs = Number(process.env.SCRIPTORIUM_BENCH_DELAY_MS);
if (!(Number.isInteger(delayMs) && delayMs >= 0)) throw new Error('delay-engine: SCRIPTORIUM_BENCH_DELAY_MS must be a whole number of milliseconds');

OcrEngine.load = async (_dir: string, options = {}) => {
  const variant: Variant = options.variant ?? 'v3';
  const read = async (images: readonly unknown[]): Promise<PageResult[]> => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return images.map(delayedPageResult);
  };
  const engine = {
    variant,
    batch: { size: 1, why: `the soak's delay engine (${delayMs} ms a batch)` },
    model: { backend: 'delay', kernels: 'none', precision: 'exact', threads: 1, convertedBytes: 0, quantize: 'none', quantizedBytes: 0 },
    recognizePages: read,
    recognizeSinglePass: read,
  };
  return engine as unknown as OcrEngine;
};

function delayedPageResult(_image: unknown, index: number): PageResult {
  const text = `page ${index + 1} of the batch, read by the delay engine`;
  return {
    markdown: text,
    blocks: [],
    paragraphs: [{ text, span: { start: 0, end: text.length }, confidence: { mean: 0.9, min: 0.9 } }],
    span: { start: 0, end: text.length },
    confidence: { mean: 0.9, min: 0.9 },
    rawText: text,
    tokens: { prompt: 1, image: 1, generated: 1 },
    finish: 'eos',
    timings: { preprocess: 0, encode: 0, prefill: 0, decode: delayMs, postprocess: 0 },
  };
}
