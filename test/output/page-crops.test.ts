// The image regions a page's markdown links to: cut out of the rendered page at their boxes, stored
// under results/<docId>/images/, and the links renamed to them.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import sharp from 'sharp';

import type { OcrPage } from '../../src/engine/ocr-postprocess.js';
import { storePageCrops } from '../../src/output/page-crops.js';
import { FileStorage } from '../../src/storage/file-storage.js';

const DOC = '12'.repeat(16);
let dir: string;
let storage: FileStorage;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-crops-'));
  storage = new FileStorage(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

/** A 40×30 page: white, with a red 10×8 rectangle at (20, 12). */
function page(): { width: number; height: number; data: Buffer } {
  const data = Buffer.alloc(40 * 30 * 3, 255);
  for (let y = 12; y < 20; y++) for (let x = 20; x < 30; x++) data.set([255, 0, 0], (y * 40 + x) * 3);
  return { width: 40, height: 30, data };
}

test('each image region is stored as a PNG of its box, and the markdown links to it', async () => {
  const result: OcrPage = {
    markdown: 'Intro\n![](images/0_0.png)\n\nBetween\n![](images/0_1.png)\n',
    blocks: [
      { type: 'text', text: 'Intro', boxes: [], span: { start: 0, end: 5 } },
      { type: 'image', text: '', box: [20, 12, 30, 20], boxes: [[20, 12, 30, 20]], imageLink: 'images/0_0.png', span: { start: 5, end: 9 } },
      { type: 'image', text: '', box: [35, 25, 60, 50], boxes: [[35, 25, 60, 50]], imageLink: 'images/0_1.png', span: { start: 20, end: 29 } },
    ],
    paragraphs: [
      { text: 'Intro\n![](images/0_0.png)', span: { start: 0, end: 9 } },
      { text: 'Between\n![](images/0_1.png)', span: { start: 12, end: 29 } },
    ],
    span: { start: 0, end: 29 },
  };
  const stored = await storePageCrops(DOC, 3, page(), result, storage);
  assert.equal(stored.markdown, 'Intro\n![](images/0003_0.png)\n\nBetween\n![](images/0003_1.png)\n');
  assert.deepEqual(stored.paragraphs.map((p) => p.text), ['Intro\n![](images/0003_0.png)', 'Between\n![](images/0003_1.png)'], 'paragraphs link the stored crops too');
  const { data, info } = await sharp(await storage.get(`results/${DOC}/images/0003_0.png`)).raw().toBuffer({ resolveWithObject: true });
  assert.deepEqual([info.width, info.height], [10, 8]);
  for (let i = 0; i < data.length; i += info.channels) assert.deepEqual([...data.subarray(i, i + 3)], [255, 0, 0]);
  const clipped = await sharp(await storage.get(`results/${DOC}/images/0003_1.png`)).metadata();
  assert.deepEqual([clipped.width, clipped.height], [5, 5], 'a box past the page edge is cut at the edge');
});
