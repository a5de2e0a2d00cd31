// Deterministic test images that look a little like scanned pages: smooth colour gradients, text-like rows of
// thin dark strokes with hard edges, and a sprinkle of noise.
import type { RgbImage } from '../../src/documents/rgb-image.js';

/** A seeded linear congruential generator returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

/** width × height page: gradient background, dark glyph-like strokes on text lines, 1% noise pixels. */
export function syntheticPage(width: number, height: number, seed = 1): RgbImage {
  const random = seededRandom(seed);
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      data[o] = Math.round(200 + (55 * x) / Math.max(width - 1, 1));
      data[o + 1] = Math.round(190 + (60 * y) / Math.max(height - 1, 1));
      data[o + 2] = Math.round(170 + (85 * (x + y)) / Math.max(width + height - 2, 1));
    }
  }
  const lineHeight = Math.max(4, Math.round(height / 40));
  for (let top = lineHeight; top + lineHeight < height; top += 2 * lineHeight) {
    for (let x = Math.round(width * 0.05); x < width * 0.95; ) {
      const glyphWidth = 1 + Math.floor(random() * lineHeight * 0.8);
      const glyphHeight = Math.max(1, Math.floor(lineHeight * (0.5 + random() * 0.5)));
      const ink = Math.floor(random() * 60);
      for (let y = top + lineHeight - glyphHeight; y < top + lineHeight; y++) {
        for (let dx = 0; dx < glyphWidth && x + dx < width; dx++) {
          if ((dx + y) % 3 === 0 && glyphWidth > 2) continue; // hollow strokes give more edges
          data.fill(ink, (y * width + x + dx) * 3, (y * width + x + dx) * 3 + 3);
        }
      }
      x += glyphWidth + 1 + Math.floor(random() * lineHeight * 0.6);
    }
  }
  for (let i = 0; i < width * height * 0.01; i++) {
    const p = Math.floor(random() * width * height) * 3;
    data[p] = Math.floor(random() * 256);
  }
  return { width, height, data };
}

/** Uniform random pixels: the worst case for rounding differences. */
export function noiseImage(width: number, height: number, seed = 1): RgbImage {
  const random = seededRandom(seed);
  return { width, height, data: Uint8Array.from({ length: width * height * 3 }, () => Math.floor(random() * 256)) };
}
