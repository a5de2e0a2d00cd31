// A document page as a JPEG for people to look at, rendered from the staged source with the
// documents' own page rendering (PDFium in its worker thread for PDFs, sharp for images and TIFF
// pages) and scaled by sharp, so nothing of it runs on the event loop. The grounding boxes are pixels
// of the page as the worker rendered it; this image has the same aspect ratio at another size, so the
// page view lays it under the boxes scaled to the worker's size.
import sharp from 'sharp';

import { renderPage, type DocumentType } from '../documents/document.js';

const JPEG_QUALITY = 80;

/** Page `page` (1-based) of `source`, no larger than `longestSide` pixels on its longer side. */
export async function pageImageJpeg(source: Buffer, type: DocumentType, page: number, longestSide: number): Promise<Buffer> {
  const image = await renderPage(source, type, page - 1, type === 'pdf' ? { longestSide } : {});
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize({ width: longestSide, height: longestSide, fit: 'inside', withoutEnlargement: true })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer();
}
