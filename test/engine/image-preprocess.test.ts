import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { RgbImage } from '../../src/documents/rgb-image.js';
import {
  dynamicTiles,
  padToSquare,
  preprocessPage,
  roundHalfEven,
  roundToBf16,
} from '../../src/engine/image-preprocess.js';
import { pillowResizeBicubic } from '../../src/engine/pillow-resize.js';
import { pythonWithPillow, runPython, skipWithoutPillow } from '../support/python-pillow.js';
import { noiseImage, syntheticPage } from '../support/synthetic-images.js';

/** Pillow operations on raw RGB bytes from stdin: pad or stretched tiles. */
const PILLOW = `
import io, sys
from PIL import Image, ImageOps
op = sys.argv[1]
data = sys.stdin.buffer.read()
w, h = int(sys.argv[2]), int(sys.argv[3])
image = Image.frombytes('RGB', (w, h), data)
if op == 'pad':
    side = int(sys.argv[4])
    sys.stdout.buffer.write(ImageOps.pad(image, (side, side), color=(127, 127, 127)).tobytes())
elif op == 'tiles':
    side, columns, rows = map(int, sys.argv[4:7])
    stretched = image.resize((side * columns, side * rows))
    for k in range(columns * rows):
        x, y = (k % columns) * side, (k // columns) * side
        sys.stdout.buffer.write(stretched.crop((x, y, x + side, y + side)).tobytes())
`;

function pillow(op: string, image: RgbImage, ...args: number[]): Buffer {
  return runPython(pythonWithPillow!, PILLOW, [op, image.width, image.height, ...args], image.data);
}

function assertSameBytes(ours: Uint8Array, theirs: Uint8Array, what: string): void {
  assert.equal(ours.length, theirs.length, `${what}: length`);
  const i = ours.findIndex((v, k) => v !== theirs[k]);
  assert.equal(i, -1, `${what}: first difference at byte ${i}: ours ${ours[i]}, Pillow ${theirs[i]}`);
}

function pixel(image: RgbImage, x: number, y: number): number[] {
  return [...image.data.subarray((y * image.width + x) * 3, (y * image.width + x) * 3 + 3)];
}

describe('roundHalfEven (Python round)', () => {
  test('halves go to the even neighbour', () => {
    assert.deepEqual([0.5, 1.5, 2.5, 510.5, -0.5, 2.4999, 2.5001].map(roundHalfEven), [0, 2, 2, 510, 0, 2, 3]);
  });
});

describe('padToSquare', () => {
  test('centres a 3-pixel-wide strip at x = round(1021 × 0.5) = 510 on gray 127', () => {
    const strip: RgbImage = { width: 10, height: 3000, data: new Uint8Array(10 * 3000 * 3).fill(20) };
    const padded = padToSquare(strip, 1024);
    assert.deepEqual([509, 510, 512, 513].map((x) => pixel(padded, x, 500)), [[127, 127, 127], [20, 20, 20], [20, 20, 20], [127, 127, 127]]);
  });

  test('a square image is only resized (upscaled too)', () => {
    const small = noiseImage(50, 50);
    assert.deepEqual(padToSquare(small, 640).data, pillowResizeBicubic(small, 640, 640).data);
  });

  const cases: Record<string, [number, number, number]> = {
    'portrait page downscaled': [1191, 1684, 1024],
    'landscape page downscaled': [900, 500, 640],
    'small image upscaled': [300, 211, 1024],
    'odd padding split (banker rounding)': [1001, 400, 1024],
    'extreme strip': [3000, 10, 1024],
  };
  for (const [name, [w, h, side]] of Object.entries(cases)) {
    test(`matches ImageOps.pad: ${name}`, { skip: skipWithoutPillow }, () => {
      const image = syntheticPage(w, h, 9);
      assertSameBytes(padToSquare(image, side).data, pillow('pad', image, side), name);
    });
  }
});

describe('dynamicTiles', () => {
  test('cuts tiles in row-major order', () => {
    // 4×2 blocks of 640, each one colour: stretched at scale 1, tile k must be block k.
    const image: RgbImage = { width: 2560, height: 1280, data: new Uint8Array(2560 * 1280 * 3) };
    for (let y = 0; y < 1280; y++) for (let x = 0; x < 2560; x++) image.data[(y * 2560 + x) * 3] = 10 * (Math.floor(y / 640) * 4 + Math.floor(x / 640));
    const { grid, tiles } = dynamicTiles(image, 640, 9);
    assert.deepEqual(grid, [4, 2]);
    assert.deepEqual(tiles.map((t) => pixel(t, 320, 320)[0]), [0, 10, 20, 30, 40, 50, 60, 70]);
  });

  for (const [w, h, side, max] of [[1191, 1684, 640, 9], [1700, 900, 768, 6], [700, 3000, 640, 32]] as const) {
    test(`matches Pillow resize + crop: ${w}×${h}, ${side} tiles, max ${max}`, { skip: skipWithoutPillow }, () => {
      const image = syntheticPage(w, h, 13);
      const { grid, tiles } = dynamicTiles(image, side, max);
      const ours = Buffer.concat(tiles.map((t) => t.data));
      assertSameBytes(ours, pillow('tiles', image, side, grid[0], grid[1]), `${w}×${h}`);
    });
  }
});

describe('preprocessPage', () => {
  const gray = (width: number, height: number, value: number): RgbImage => ({ width, height, data: new Uint8Array(width * height * 3).fill(value) });

  test('normalises p to p/255 then (x − 0.5)/0.5 in float32, rounded to bfloat16', () => {
    const values = (p: number, roundToBf16?: boolean) => preprocessPage(gray(8, 8, p), 'v1', 'tiny', { roundToBf16 }).global[0];
    assert.deepEqual([0, 255, 127, 128].map((p) => values(p)), [-1, 1, -0.003936767578125, 0.003936767578125]);
    assert.equal(values(127, false), Math.fround(-0.0039215683937072754));
  });

  test('roundToBf16 rounds to nearest, ties to even', () => {
    assert.equal(roundToBf16(1 + 2 ** -8), 1); // tie, 1 is even
    assert.equal(roundToBf16(1 + 3 * 2 ** -8), 1 + 2 ** -6); // tie, rounds up to even
    assert.equal(roundToBf16(1 + 2 ** -8 + 2 ** -12), 1 + 2 ** -7);
  });

  test('global view is planar [3, B, B]', () => {
    const image: RgbImage = { width: 1, height: 1, data: Uint8Array.of(255, 0, 127) };
    const page = preprocessPage(image, 'v1', 'tiny');
    const plane = 512 * 512;
    assert.deepEqual([page.global[0], page.global[plane], page.global[2 * plane]], [1, -1, -0.003936767578125]);
    assert.equal(page.global.length, 3 * plane);
  });

  test('small non-crop mode stretches to 640² (no gray bars)', () => {
    const image = noiseImage(600, 300);
    const page = preprocessPage(image, 'v1', 'small', { roundToBf16: false });
    const stretched = pillowResizeBicubic(image, 640, 640);
    assert.equal(page.globalSide, 640);
    assert.equal(page.global[0], Math.fround(Math.fround(Math.fround(stretched.data[0] / 255) - 0.5) / 0.5));
    assert.equal(page.tiles, undefined);
  });

  test('base and large modes pad with gray to 1024² / 1280²', () => {
    for (const [mode, side] of [['base', 1024], ['large', 1280]] as const) {
      const page = preprocessPage(gray(200, 100, 0), 'v3', mode);
      assert.equal(page.globalSide, side);
      assert.equal(page.global[0], roundToBf16(Math.fround(127 / 255 - 0.5) / 0.5)); // top-left corner is padding
      assert.equal(page.global[(side / 2) * side + side / 2], -1); // centre is the image
    }
  });

  test('gundam: page within one tile gets only the 1024 global view', () => {
    const page = preprocessPage(gray(640, 480, 9), 'v1', 'gundam');
    assert.deepEqual([page.globalSide, page.tileSide, page.grid, page.tiles], [1024, 640, [1, 1], undefined]);
  });

  test('gundam: V1 allows 9 tiles by default, 6 with maxTiles 6', () => {
    assert.deepEqual(preprocessPage(gray(640 * 9, 640, 9), 'v1', 'gundam').grid, [9, 1]);
    assert.deepEqual(preprocessPage(gray(640 * 9, 640, 9), 'v1', 'gundam', { maxTiles: 6 }).grid, [6, 1]);
  });

  test('V2 cuts 768-pixel tiles only above 768 pixels', () => {
    assert.deepEqual(preprocessPage(gray(768, 700, 9), 'v2', 'gundam').grid, [1, 1]);
    const page = preprocessPage(gray(1600, 800, 9), 'v2', 'gundam');
    assert.deepEqual([page.tileSide, page.grid, page.tiles?.length], [768, [2, 1], 2 * 3 * 768 * 768]);
  });

  test('tiles tensor is [n, 3, S, S] in row-major tile order', () => {
    const image: RgbImage = { width: 1280, height: 1280, data: new Uint8Array(1280 * 1280 * 3) };
    for (let y = 0; y < 1280; y++) for (let x = 0; x < 1280; x++) image.data[(y * 1280 + x) * 3 + 1] = x >= 640 && y < 640 ? 255 : 0;
    const page = preprocessPage(image, 'v3', 'gundam');
    const tile = 3 * 640 * 640;
    const green = (k: number) => page.tiles![k * tile + 640 * 640 + 320 * 640 + 320];
    assert.deepEqual(page.grid, [2, 2]);
    assert.deepEqual([0, 1, 2, 3].map(green), [-1, 1, -1, -1]);
  });
});
