import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { chooseTileGrid, tileGridCandidates, type MaxTiles } from '../../src/engine/tile-grid.js';
import { python, runPython } from '../support/python-pillow.js';
import { seededRandom } from '../support/synthetic-images.js';

const MAX_TILES: MaxTiles[] = [6, 9, 32];
const skipWithoutPython = python ? false : 'no python3';

/** The official candidate expression and walk (find_closest_aspect_ratio), run by CPython. */
const OFFICIAL_TILING = `
import json, sys

def candidates(max_num, min_num=2):
    ratios = set((i, j) for n in range(min_num, max_num + 1) for i in range(1, n + 1) for j in range(1, n + 1)
                 if i * j <= max_num and i * j >= min_num)
    return sorted(ratios, key=lambda x: x[0] * x[1])

def closest(width, height, image_size, max_num):
    aspect = width / height
    best_diff, best = float('inf'), (1, 1)
    for ratio in candidates(max_num):
        diff = abs(aspect - ratio[0] / ratio[1])
        if diff < best_diff:
            best_diff, best = diff, ratio
        elif diff == best_diff and width * height > 0.5 * image_size * image_size * ratio[0] * ratio[1]:
            best = ratio
    return best

request = json.load(sys.stdin)
if request['op'] == 'candidates':
    print(json.dumps({m: candidates(m) for m in request['max']}))
else:
    print(json.dumps([closest(w, h, s, m) for w, h, s, m in request['pages']]))
`;

function official(request: object): unknown {
  return JSON.parse(runPython(python!, OFFICIAL_TILING, [], Buffer.from(JSON.stringify(request))).toString());
}

describe('tile grid candidates', () => {
  for (const max of MAX_TILES) {
    test(`max ${max}: every grid with 2 ≤ columns·rows ≤ ${max} once, by ascending product`, () => {
      const grids = tileGridCandidates(max);
      const products = grids.map(([i, j]) => i * j);
      assert.deepEqual(products, [...products].sort((a, b) => a - b));
      assert.ok(products.every((p) => p >= 2 && p <= max));
      let expected = 0;
      for (let p = 2; p <= max; p++) for (let i = 1; i <= p; i++) if (p % i === 0) expected++;
      assert.equal(new Set(grids.map(String)).size, expected);
      assert.equal(grids.length, expected);
    });
  }

  test('max 6 walks the equal-product grids in CPython set order', () => {
    assert.deepEqual(tileGridCandidates(6), [[1, 2], [2, 1], [3, 1], [1, 3], [4, 1], [1, 4], [2, 2], [1, 5], [5, 1], [6, 1], [2, 3], [1, 6], [3, 2]]);
  });

  test('the embedded orders equal what CPython produces', { skip: skipWithoutPython }, () => {
    const derived = official({ op: 'candidates', max: MAX_TILES }) as Record<string, number[][]>;
    for (const max of MAX_TILES) assert.deepEqual(tileGridCandidates(max), derived[max], `max ${max}`);
  });

  test('an unsupported maximum is refused', () => {
    assert.throws(() => tileGridCandidates(7 as MaxTiles), /6, 9 or 32/);
  });
});

describe('chooseTileGrid', () => {
  test('tie at aspect 1.25 (max 6, 640 tiles): (3, 2) replaces (2, 2) when W·H > 1,228,800', () => {
    assert.deepEqual(chooseTileGrid(1240, 992, 640, 6), [3, 2]); // area 1,230,080
    assert.deepEqual(chooseTileGrid(1235, 988, 640, 6), [2, 2]); // area 1,220,180
  });

  test('A4 portrait gets 2×3 tiles at 144 DPI and 4×6 at 300 DPI with max 32 (tie won by area)', () => {
    assert.deepEqual(chooseTileGrid(1191, 1684, 640, 32), [2, 3]);
    assert.deepEqual(chooseTileGrid(2480, 3508, 640, 32), [4, 6]);
  });

  test('a very tall page gets one column of the most tiles allowed', () => {
    assert.deepEqual(chooseTileGrid(10, 3000, 640, 9), [1, 9]);
    assert.deepEqual(chooseTileGrid(3000, 10, 768, 6), [6, 1]);
  });

  test('agrees with the official code on random, tied and extreme page sizes', { skip: skipWithoutPython }, () => {
    const random = seededRandom(42);
    const pages: [number, number, number, MaxTiles][] = [];
    for (const max of MAX_TILES) {
      for (const side of [640, 768]) {
        for (let n = 0; n < 150; n++) pages.push([1 + Math.floor(random() * 5000), 1 + Math.floor(random() * 5000), side, max]);
        // Exact midpoints between two candidate ratios, at areas on both sides of the tie-break threshold.
        const grids = tileGridCandidates(max);
        for (let n = 0; n < 60; n++) {
          const [a, b] = [grids[Math.floor(random() * grids.length)], grids[Math.floor(random() * grids.length)]];
          const num = a[0] * b[1] + b[0] * a[1];
          const den = 2 * a[1] * b[1];
          const scale = 1 + Math.floor(random() * Math.max(1, 4000 / Math.max(num, den)));
          pages.push([num * scale, den * scale, side, max]);
        }
        pages.push([1, 1, side, max], [1, 5000, side, max], [5000, 1, side, max], [side + 1, side, side, max]);
      }
    }
    const expected = official({ op: 'grids', pages }) as number[][];
    pages.forEach(([w, h, side, max], k) => assert.deepEqual(chooseTileGrid(w, h, side, max), expected[k], `${w}×${h} S ${side} max ${max}`));
  });
});
