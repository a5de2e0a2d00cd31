// The image regions a page's markdown links to (`image` blocks), cut out of the rendered page and
// stored as PNGs at results/<docId>/images/<nnnn>_<n>.png; the markdown's links are rewritten to
// those names, relative to the document's results folder, so document.md shows them (and the
// paragraphs that hold them).
import sharp from 'sharp';

import type { RgbImage } from '../documents/rgb-image.js';
import type { OcrPage } from '../engine/ocr-postprocess.js';
import { pageImage } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';

/** Stores the page's image regions; resolves with the page, its image links renamed to the stored crops. */
export async function storePageCrops<P extends OcrPage>(docId: string, page: number, image: RgbImage, result: P, storage: Storage): Promise<P> {
  let markdown = result.markdown;
  let paragraphs = result.paragraphs;
  let index = 0;
  const blocks = [];
  for (const block of result.blocks) {
    if (block.type !== 'image' || block.imageLink === undefined) {
      blocks.push(block);
      continue;
    }
    const { key, link } = pageImage(docId, page, index++);
    const region = block.box === undefined ? undefined : clampedRegion(block.box, image);
    if (region !== undefined) {
      const png = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } }).extract(region).png().toBuffer();
      await storage.put(key, png, { contentType: 'image/png' });
    }
    const renamed = (text: string) => text.replace(`](${block.imageLink})`, `](${link})`);
    markdown = renamed(markdown);
    paragraphs = paragraphs.map((paragraph) => ({ ...paragraph, text: renamed(paragraph.text) }));
    blocks.push({ ...block, imageLink: link });
  }
  return { ...result, markdown, blocks, paragraphs };
}

/** The box [x0, y0, x1, y1] inside the image as sharp's extract region; undefined when nothing is left. */
function clampedRegion([x0, y0, x1, y1]: [number, number, number, number], image: RgbImage): { left: number; top: number; width: number; height: number } | undefined {
  const left = Math.max(0, Math.min(image.width, Math.floor(x0)));
  const top = Math.max(0, Math.min(image.height, Math.floor(y0)));
  const right = Math.max(left, Math.min(image.width, Math.ceil(x1)));
  const bottom = Math.max(top, Math.min(image.height, Math.ceil(y1)));
  return right > left && bottom > top ? { left, top, width: right - left, height: bottom - top } : undefined;
}
