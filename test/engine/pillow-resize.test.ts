import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { RgbImage } from '../../src/documents/rgb-image.js';
import { pillowResizeBicubic } from '../../src/engine/pillow-resize.js';
import { pythonWithPillow, runPython, skipWithoutPillow } from '../support/python-pillow.js';
import { noiseImage, syntheticPage } from '../support/synthetic-images.js';

const PILLOW_RESIZE = `
import sys
from PIL import Image
w, h, ow, oh = map(int, sys.argv[1:5])
image = Image.frombytes('RGB', (w, h), sys.stdin.buffer.read())
sys.stdout.buffer.write(image.resize((ow, oh), Image.BICUBIC).tobytes())
`;

function pillowResize(image: RgbImage, width: number, height: number): Uint8Array {
  return runPython(pythonWithPillow!, PILLOW_RESIZE, [image.width, image.height, width, height], image.data);
}

/** Index and values of the first differing byte, for a readable failure. */
function firstDifference(ours: Uint8Array, theirs: Uint8Array): string {
  const i = ours.findIndex((v, k) => v !== theirs[k]);
  return i < 0 ? 'none' : `byte ${i}: ours ${ours[i]}, Pillow ${theirs[i]}`;
}

/** [input width, input height, output width, output height] */
const CASES: Record<string, [number, number, number, number]> = {
  'downscale by a non-integer factor': [1240, 1754, 724, 1024],
  'downscale by exactly 2': [400, 300, 200, 150],
  'upscale a small image': [37, 23, 640, 640],
  'upscale for tiling (stretch)': [1000, 800, 1920, 1280],
  'odd sizes both ways': [333, 517, 211, 999],
  'extreme wide aspect': [3000, 10, 1024, 3],
  'extreme tall aspect': [10, 3000, 3, 1024],
  'width only (vertical pass skipped)': [301, 97, 640, 97],
  'height only (horizontal pass skipped)': [301, 97, 301, 768],
  'one pixel to many': [1, 1, 17, 9],
  'many to one pixel': [50, 70, 1, 1],
};

describe('pillowResizeBicubic matches Pillow bit for bit', () => {
  for (const [name, [w, h, ow, oh]] of Object.entries(CASES)) {
    test(name, { skip: skipWithoutPillow }, () => {
      for (const image of [syntheticPage(w, h, 7), noiseImage(w, h, 11)]) {
        const ours = pillowResizeBicubic(image, ow, oh);
        const theirs = pillowResize(image, ow, oh);
        assert.equal(ours.data.length, theirs.length);
        assert.ok(Buffer.from(ours.data).equals(theirs), firstDifference(ours.data, theirs));
      }
    });
  }
});

describe('pillowResizeBicubic', () => {
  test('returns a copy when the size does not change', () => {
    const image = noiseImage(5, 4);
    const out = pillowResizeBicubic(image, 5, 4);
    assert.deepEqual(out.data, image.data);
    assert.notEqual(out.data, image.data);
  });

  test('keeps a constant image constant', () => {
    const image: RgbImage = { width: 13, height: 7, data: new Uint8Array(13 * 7 * 3).fill(127) };
    assert.ok(pillowResizeBicubic(image, 40, 3).data.every((v) => v === 127));
  });

  test('overshoot at a hard edge is clipped, so an upscaled step stays monotonic', () => {
    const data = new Uint8Array(8 * 1 * 3);
    data.fill(255, 12);
    const red = [...pillowResizeBicubic({ width: 8, height: 1, data }, 29, 1).data].filter((_, i) => i % 3 === 0);
    assert.deepEqual(red, [...red].sort((a, b) => a - b));
    assert.equal(red[0], 0);
    assert.equal(red.at(-1), 255);
  });

  test('rejects a zero target size', () => {
    assert.throws(() => pillowResizeBicubic(noiseImage(4, 4), 0, 4), RangeError);
  });
});
