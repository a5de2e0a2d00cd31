// Page images decode as the official load_image + convert('RGB') does: EXIF orientation applied, alpha
// dropped without compositing, ICC profiles ignored; compared byte for byte with Pillow when present.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import sharp from 'sharp';

import { detectDocumentType } from '../../src/documents/document-type.js';
import { decodeImagePage, type ImageType } from '../../src/documents/image-document.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';
import { pythonWithPillow, runPython, skipWithoutPillow } from '../support/python-pillow.js';
import { syntheticPage } from '../support/synthetic-images.js';

const PILLOW_LOAD = `
import io, sys
from PIL import Image, ImageOps
data = sys.stdin.buffer.read()
sys.stdout.buffer.write(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert('RGB').tobytes())
`;

function pillowLoad(file: Buffer): Buffer {
  return runPython(pythonWithPillow!, PILLOW_LOAD, [], file);
}

function loadPageImage(bytes: Buffer): Promise<RgbImage> {
  return decodeImagePage(bytes, detectDocumentType(bytes) as ImageType, 0);
}

function pixel(image: RgbImage, x: number, y: number): number[] {
  return [...image.data.subarray((y * image.width + x) * 3, (y * image.width + x) * 3 + 3)];
}

function assertSameBytes(ours: Uint8Array, theirs: Uint8Array, what: string): void {
  assert.equal(ours.length, theirs.length, `${what}: length`);
  const i = ours.findIndex((v, k) => v !== theirs[k]);
  assert.equal(i, -1, `${what}: first difference at byte ${i}: ours ${ours[i]}, Pillow ${theirs[i]}`);
}

describe('decoding a page image as the official pipeline (Pillow) does', () => {
  const rgba = Uint8Array.from([255, 0, 0, 0, 0, 255, 0, 128, 0, 0, 255, 255, 10, 20, 30, 0]);
  const rgbaPng = () => sharp(Buffer.from(rgba), { raw: { width: 2, height: 2, channels: 4 } }).png().toBuffer();

  test('drops alpha without compositing, as Pillow convert("RGB")', async () => {
    const image = await loadPageImage(await rgbaPng());
    assert.deepEqual([...image.data], [255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30]);
  });

  test('applies the EXIF orientation (6: rotate 90° clockwise)', async () => {
    const data = new Uint8Array(4 * 2 * 3);
    data.set([250, 0, 0], 0); // top-left red
    const png = await sharp(Buffer.from(data), { raw: { width: 4, height: 2, channels: 3 } })
      .png()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const image = await loadPageImage(png);
    assert.deepEqual([image.width, image.height], [2, 4]);
    assert.deepEqual(pixel(image, 1, 0), [250, 0, 0]); // now top-right
  });

  test('expands grayscale to three equal channels', async () => {
    const gray = await sharp(Buffer.from([0, 100, 200, 255]), { raw: { width: 2, height: 2, channels: 1 } }).png().toBuffer();
    const image = await loadPageImage(gray);
    assert.deepEqual([...image.data], [0, 0, 0, 100, 100, 100, 200, 200, 200, 255, 255, 255]);
  });

  test('decodes PNG (RGBA, gray, Display P3 profile ignored) and EXIF-rotated JPEG exactly as Pillow', { skip: skipWithoutPillow }, async () => {
    const page = syntheticPage(37, 23, 5);
    const files = [
      await rgbaPng(),
      await sharp(Buffer.from(page.data), { raw: { width: 37, height: 23, channels: 3 } }).withIccProfile('p3').png().toBuffer(),
      await sharp(Buffer.from(page.data), { raw: { width: 37, height: 23, channels: 3 } }).toColourspace('b-w').png().toBuffer(),
      await sharp(Buffer.from(page.data), { raw: { width: 37, height: 23, channels: 3 } })
        .jpeg({ quality: 90 })
        .withMetadata({ orientation: 8 })
        .toBuffer(),
    ];
    for (const [i, file] of files.entries()) assertSameBytes((await loadPageImage(file)).data, pillowLoad(file), `file ${i}`);
  });
});

