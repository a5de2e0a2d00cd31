import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { preprocessPage } from '../../src/engine/image-preprocess.js';
import type { Variant, VisionMode } from '../../src/vocabulary/ocr-vocabulary.js';
import { imageTokenCount, modeGeometry } from '../../src/engine/image-tokens.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';

/** A uniform page: token counts depend only on the size. */
function blankPage(width: number, height: number): RgbImage {
  return { width, height, data: new Uint8Array(width * height * 3).fill(200) };
}

describe('K without tiles', () => {
  const expected: [Variant, VisionMode, number][] = [
    ['v1', 'tiny', 73],
    ['v1', 'small', 111],
    ['v1', 'base', 273],
    ['v1', 'large', 421],
    ['v3', 'tiny', 73],
    ['v3', 'base', 273],
    ['v1', 'gundam', 273],
    ['v3', 'gundam', 273],
    ['v2', 'gundam', 257],
  ];
  for (const [variant, mode, k] of expected) {
    test(`${variant} ${mode}: ${k}`, () => assert.equal(imageTokenCount(variant, mode, [1, 1]), k));
  }
});

describe('K with tiles', () => {
  test('V1/V3 gundam grids (2,2) / (3,2) / (2,3): 693 / 893 / 903', () => {
    assert.deepEqual([[2, 2], [3, 2], [2, 3]].map((g) => imageTokenCount('v1', 'gundam', g as [number, number])), [693, 893, 903]);
  });

  test('V1 gundam maxima: (1,6) 933, (1,9) 1263, (3,3) 1203', () => {
    assert.deepEqual([[1, 6], [1, 9], [3, 3]].map((g) => imageTokenCount('v1', 'gundam', g as [number, number])), [933, 1263, 1203]);
  });

  test('V3 gundam (1,32): 3793', () => assert.equal(imageTokenCount('v3', 'gundam', [1, 32]), 3793));

  test('V2 n tiles: 257 + 144·n, at most 1121', () => {
    assert.deepEqual([[1, 2], [2, 2], [3, 2]].map((g) => imageTokenCount('v2', 'gundam', g as [number, number])), [545, 833, 1121]);
  });

  test('a grid in a non-crop mode is refused', () => {
    assert.throws(() => imageTokenCount('v1', 'base', [2, 1]), /no tiles/);
  });

  test('a mode the variant lacks is refused', () => {
    assert.throws(() => imageTokenCount('v2', 'base', [1, 1]), /v2 has no vision mode "base"/);
  });
});

/** [width, height] -> K per crop-mode variant (V1 max 9, V2 max 6, V3 max 32), worked out by hand from §4.2 and §6.3. */
const PAGES: Record<string, { size: [number, number]; k: Record<Variant, number>; tiles: Record<Variant, number> }> = {
  '1×1': { size: [1, 1], k: { v1: 273, v2: 257, v3: 273 }, tiles: { v1: 0, v2: 0, v3: 0 } },
  '10×3000': { size: [10, 3000], k: { v1: 1263, v2: 1121, v3: 3793 }, tiles: { v1: 9, v2: 6, v3: 32 } },
  '3000×10': { size: [3000, 10], k: { v1: 1183, v2: 1121, v3: 3483 }, tiles: { v1: 9, v2: 6, v3: 32 } },
  '640×640': { size: [640, 640], k: { v1: 273, v2: 257, v3: 273 }, tiles: { v1: 0, v2: 0, v3: 0 } },
  '641×640': { size: [641, 640], k: { v1: 693, v2: 257, v3: 693 }, tiles: { v1: 4, v2: 0, v3: 4 } },
  'A4 at 144 DPI (1191×1684)': { size: [1191, 1684], k: { v1: 903, v2: 1121, v3: 903 }, tiles: { v1: 6, v2: 6, v3: 6 } },
  'A4 at 300 DPI (2480×3508)': { size: [2480, 3508], k: { v1: 903, v2: 1121, v3: 2733 }, tiles: { v1: 6, v2: 6, v3: 24 } },
};

describe('K of real page sizes equals the formula and the tiles actually produced', () => {
  for (const [name, { size, k, tiles }] of Object.entries(PAGES)) {
    for (const variant of ['v1', 'v2', 'v3'] as Variant[]) {
      test(`${variant} gundam, ${name}: K ${k[variant]}, ${tiles[variant]} tiles`, () => {
        const page = preprocessPage(blankPage(...size), variant, 'gundam');
        const { imageSize } = modeGeometry(variant, 'gundam');
        const produced = page.tiles ? page.tiles.length / (3 * imageSize * imageSize) : 0;
        assert.equal(produced, tiles[variant]);
        assert.equal(page.imageTokens, k[variant]);
        assert.equal(page.imageTokens, imageTokenCount(variant, 'gundam', page.grid));
        assert.equal(page.grid[0] * page.grid[1], Math.max(produced, 1));
      });
    }
  }

  test('non-crop modes give the same K whatever the page size', () => {
    for (const size of [[1, 1], [10, 3000], [3000, 10], [1191, 1684]] as [number, number][]) {
      assert.equal(preprocessPage(blankPage(...size), 'v3', 'base').imageTokens, 273);
      assert.equal(preprocessPage(blankPage(...size), 'v1', 'small').imageTokens, 111);
    }
  });
});
