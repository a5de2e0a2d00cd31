// Image documents: page counts and page decoding to 8-bit RGB.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { decodeImagePage, imagePageCount } from '../../src/documents/image-document.js';
import type { RgbImage } from '../../src/documents/document.js';
import {
  makeAnimatedGif,
  makeBilevelTiff,
  makeBmp24,
  makeBmp8TopDown,
  makeCmykJpeg,
  makeGrayscalePng,
  makeJpegWithOrientation6,
  makePng,
  makeRleBmp,
  makeSixteenBitPng,
  makeTransparentPng,
  makeTwoPageTiff,
  makeWebp,
} from '../support/make-documents.js';

function pixel(image: RgbImage, x: number, y: number): number[] {
  const offset = (y * image.width + x) * 3;
  return [...image.data.subarray(offset, offset + 3)];
}

/** JPEG, CMYK conversion and sharp's frame joining are lossy: compare colours within a tolerance. */
function assertNear(actual: number[], expected: number[], tolerance = 24): void {
  assert.ok(
    actual.every((value, i) => Math.abs(value - expected[i]) <= tolerance),
    `${JSON.stringify(actual)} is not within ${tolerance} of ${JSON.stringify(expected)}`,
  );
}

test('a two-page TIFF has two pages', async () => {
  assert.equal(await imagePageCount(await makeTwoPageTiff(), 'tiff'), 2);
});

test('the pages of a TIFF decode with their own content: red, then blue', async () => {
  const tiff = await makeTwoPageTiff();
  assertNear(pixel(await decodeImagePage(tiff, 'tiff', 0), 0, 0), [255, 0, 0], 2);
  assertNear(pixel(await decodeImagePage(tiff, 'tiff', 1), 0, 0), [0, 0, 255], 2);
});

test('a PNG decodes to RGB at its own size', async () => {
  const image = await decodeImagePage(await makePng(), 'png', 0);
  assert.deepEqual([image.width, image.height, image.data.length], [60, 40, 60 * 40 * 3]);
});

test('EXIF orientation 6 rotates a 60×40 JPEG to 40×60, its left (red) half on top', async () => {
  const image = await decodeImagePage(await makeJpegWithOrientation6(), 'jpeg', 0);
  assert.deepEqual([image.width, image.height], [40, 60]);
  assertNear(pixel(image, 20, 5), [255, 0, 0]);
  assertNear(pixel(image, 20, 55), [0, 0, 255]);
});

test('alpha is dropped without compositing: transparent RGB (10, 20, 30) stays (10, 20, 30)', async () => {
  const image = await decodeImagePage(await makeTransparentPng(), 'png', 0);
  assert.equal(image.data.length, 4 * 4 * 3);
  assert.deepEqual(pixel(image, 0, 0), [10, 20, 30]);
});

test('grayscale decodes to RGB with equal channels', async () => {
  assert.deepEqual(pixel(await decodeImagePage(await makeGrayscalePng(), 'png', 0), 0, 0), [64, 64, 64]);
});

test('16 bits per channel decode to 8 bits', async () => {
  const image = await decodeImagePage(await makeSixteenBitPng(), 'png', 0);
  assert.deepEqual([image.data.length, ...pixel(image, 0, 0)], [4 * 4 * 3, 128, 64, 32]);
});

test('a CMYK JPEG decodes to sRGB', async () => {
  assertNear(pixel(await decodeImagePage(await makeCmykJpeg(), 'jpeg', 0), 0, 0), [255, 0, 0], 40);
});

test('a bilevel CCITT group 4 TIFF decodes to RGB', async () => {
  const image = await decodeImagePage(await makeBilevelTiff(), 'tiff', 0);
  assert.deepEqual([image.width, image.height, ...pixel(image, 10, 10)], [64, 32, 0, 0, 0]);
});

test('a WebP decodes', async () => {
  const image = await decodeImagePage(await makeWebp(), 'webp', 0);
  assert.deepEqual([image.width, pixel(image, 0, 0), pixel(image, 59, 0)], [60, [255, 0, 0], [0, 0, 255]]);
});

test('an animated GIF is one page: its first (red) frame', async () => {
  const gif = await makeAnimatedGif();
  assert.equal(await imagePageCount(gif, 'gif'), 1);
  assert.deepEqual(pixel(await decodeImagePage(gif, 'gif', 0), 0, 0), [255, 0, 0]);
});

test('a 24-bit bottom-up BMP with padded rows decodes its top row first', async () => {
  const image = await decodeImagePage(makeBmp24(), 'bmp', 0);
  assert.deepEqual([image.width, image.height], [5, 3]);
  assert.deepEqual([pixel(image, 4, 0), pixel(image, 4, 2)], [[255, 0, 0], [0, 0, 255]]);
});

test('an 8-bit palette BMP stored top-down decodes through its palette', async () => {
  const image = await decodeImagePage(makeBmp8TopDown(), 'bmp', 0);
  assert.deepEqual([pixel(image, 2, 0), pixel(image, 2, 1)], [[255, 0, 0], [0, 0, 255]]);
});

test('an RLE-compressed BMP fails with a DocumentError saying so', async () => {
  await assert.rejects(decodeImagePage(makeRleBmp(), 'bmp', 0), {
    name: 'DocumentError',
    reason: 'RLE8 BMP is not supported (only uncompressed and bit-field BMP)',
  });
});

test('page index 1 of a single-page image fails with the page count in the reason', async () => {
  await assert.rejects(decodeImagePage(await makePng(), 'png', 1), {
    reason: 'page index 1 is out of range: the document has 1 page',
  });
});

test('a truncated JPEG fails with a DocumentError carrying the decoder\'s reason', async () => {
  const jpeg = await makeJpegWithOrientation6();
  await assert.rejects(decodeImagePage(jpeg.subarray(0, jpeg.length - 100), 'jpeg', 0), {
    name: 'DocumentError',
    reason: /^jpeg image could not be decoded: .*premature end of JPEG image/,
  });
});
