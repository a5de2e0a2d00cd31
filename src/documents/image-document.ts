// Image documents: page count and page decode with sharp (libvips, on libuv's thread pool, so the
// event loop keeps turning), BMP with our own decoder.
//
// Pages: a multi-page TIFF is a scanned document, so its pages are document pages. A GIF or WebP
// with several frames is an animation, not a document: only its first frame is read.
import sharp from 'sharp';

import type { RgbImage } from './rgb-image.js';
import { decodeBmp, readBmpLayout } from './bmp-image.js';
import { DocumentError, pageOutOfRange } from './document-error.js';
import type { DocumentType } from './document-type.js';

export type ImageType = Exclude<DocumentType, 'pdf'>;

/**
 * Fail on decoding errors and truncated data, not on warnings: libpng and libjpeg warn about
 * harmless quirks (an incorrect sRGB profile, extraneous bytes) in many real scans.
 */
const FAIL_ON = 'error';

/** Reads the headers only; throws DocumentError when they are not a decodable image. */
export async function imagePageCount(bytes: Buffer, type: ImageType): Promise<number> {
  if (type === 'bmp') {
    readBmpLayout(bytes);
    return 1;
  }
  const metadata = await sharp(bytes, { failOn: FAIL_ON })
    .metadata()
    .catch((error: unknown) => {
      throw decodeError(type, error);
    });
  return type === 'tiff' ? (metadata.pages ?? 1) : 1;
}

/**
 * Decodes one page at its own resolution, as the official pipeline's Pillow convert('RGB') does: EXIF orientation applied, alpha dropped without compositing, embedded
 * ICC profiles ignored; 16-bit, grayscale, palette and CMYK images become 8-bit RGB.
 */
export async function decodeImagePage(bytes: Buffer, type: ImageType, pageIndex: number): Promise<RgbImage> {
  // sharp silently decodes page 0 for a page index past the end, so check first.
  const pageCount = await imagePageCount(bytes, type);
  if (!Number.isInteger(pageIndex) || pageIndex < 0 || pageIndex >= pageCount) {
    throw pageOutOfRange(pageIndex, pageCount);
  }
  if (type === 'bmp') return decodeBmp(bytes);
  const { data, info } = await sharp(bytes, { page: pageIndex, failOn: FAIL_ON, ignoreIcc: true })
    .autoOrient()
    .toColourspace('srgb')
    .removeAlpha()
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true })
    .catch((error: unknown) => {
      throw decodeError(type, error);
    });
  if (info.channels !== 3) {
    throw new DocumentError(`${type} page ${pageIndex} decoded to ${info.channels} channels, not RGB`);
  }
  return { width: info.width, height: info.height, data };
}

/** libvips repeats lines in its messages; keep each once. */
function decodeError(type: ImageType, error: unknown): DocumentError {
  const message = error instanceof Error ? error.message : String(error);
  const lines = [...new Set(message.split('\n').map((line) => line.trim()).filter(Boolean))];
  return new DocumentError(`${type} image could not be decoded: ${lines.join('; ')}`, { cause: error });
}
