// Windows BMP decoding in JavaScript: sharp's libvips (built without ImageMagick) cannot read BMP.
// Uncompressed and bit-field images of 1, 4, 8, 16, 24 and 32 bits per pixel; RLE, embedded JPEG
// and PNG are rejected with a reason.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

import type { RgbImage } from './rgb-image.js';
import { DocumentError } from './document-error.js';

/** The same cap as sharp's default limitInputPixels. */
const MAX_PIXELS = 0x3fff * 0x3fff;

/** Pixels decoded between yields to the event loop: a few milliseconds of work. */
const PIXELS_PER_SLICE = 250_000;

const COMPRESSION_NAMES = ['uncompressed', 'RLE8', 'RLE4', 'bit-field', 'JPEG', 'PNG', 'alpha bit-field'];
const BI_RGB = 0;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;

interface BmpLayout {
  width: number;
  height: number;
  topDown: boolean;
  bitsPerPixel: number;
  pixelOffset: number;
  /** Bytes per stored row, padded to 4. */
  stride: number;
  /** 256 RGB entries (unused ones black) for 1, 4 and 8 bits per pixel. */
  palette: Uint8Array;
  /** Red, green and blue masks for 16 and 32 bits per pixel. */
  masks: [number, number, number];
}

/** Reads and checks the headers; throws DocumentError for what decodeBmp cannot decode. */
export function readBmpLayout(bytes: Buffer): BmpLayout {
  if (bytes.length < 26) throw new DocumentError(`truncated BMP: ${bytes.length} bytes`);
  const infoSize = bytes.readUInt32LE(14);
  const core = infoSize === 12;
  if (!core && bytes.length < 14 + 40) throw new DocumentError('truncated BMP: incomplete info header');
  const width = core ? bytes.readUInt16LE(18) : bytes.readInt32LE(18);
  const signedHeight = core ? bytes.readUInt16LE(20) : bytes.readInt32LE(22);
  const bitsPerPixel = bytes.readUInt16LE(core ? 24 : 28);
  const compression = core ? BI_RGB : bytes.readUInt32LE(30);
  const height = Math.abs(signedHeight);

  if (compression !== BI_RGB && compression !== BI_BITFIELDS && compression !== BI_ALPHABITFIELDS) {
    const name = COMPRESSION_NAMES[compression] ?? `compression ${compression}`;
    throw new DocumentError(`${name} BMP is not supported (only uncompressed and bit-field BMP)`);
  }
  if (infoSize === 64 && compression !== BI_RGB) {
    throw new DocumentError('compressed OS/2 BMP is not supported (only uncompressed and bit-field BMP)');
  }
  if (![1, 4, 8, 16, 24, 32].includes(bitsPerPixel)) {
    throw new DocumentError(`BMP with ${bitsPerPixel} bits per pixel is not supported`);
  }
  if (compression !== BI_RGB && bitsPerPixel !== 16 && bitsPerPixel !== 32) {
    throw new DocumentError(`bit-field BMP needs 16 or 32 bits per pixel, not ${bitsPerPixel}`);
  }
  if (width <= 0 || height === 0 || width * height > MAX_PIXELS) {
    throw new DocumentError(`BMP size ${width}×${signedHeight} is not a valid image size`);
  }

  // Bit-field masks follow a 40-byte info header, or sit inside the larger ones at the same offset.
  if (compression !== BI_RGB && bytes.length < 66) {
    throw new DocumentError('truncated BMP: incomplete bit masks');
  }
  const masks: [number, number, number] =
    compression !== BI_RGB
      ? [bytes.readUInt32LE(54), bytes.readUInt32LE(58), bytes.readUInt32LE(62)]
      : bitsPerPixel === 16
        ? [0x7c00, 0x03e0, 0x001f]
        : [0xff0000, 0x00ff00, 0x0000ff];

  const palette = new Uint8Array(256 * 3);
  if (bitsPerPixel <= 8) {
    const entrySize = core ? 3 : 4;
    const declared = core ? 0 : bytes.readUInt32LE(46);
    const paletteStart = 14 + infoSize;
    const stored = Math.floor((bytes.length - paletteStart) / entrySize);
    const entries = Math.min(declared || 1 << bitsPerPixel, 256, stored);
    for (let i = 0; i < entries; i++) {
      const entry = paletteStart + i * entrySize;
      palette[i * 3] = bytes[entry + 2];
      palette[i * 3 + 1] = bytes[entry + 1];
      palette[i * 3 + 2] = bytes[entry];
    }
  }

  const pixelOffset = bytes.readUInt32LE(10);
  const stride = Math.ceil((width * bitsPerPixel) / 32) * 4;
  const needed = pixelOffset + stride * (height - 1) + Math.ceil((width * bitsPerPixel) / 8);
  if (needed > bytes.length) {
    throw new DocumentError(`truncated BMP: pixel data needs ${needed} bytes, the file has ${bytes.length}`);
  }
  return { width, height, topDown: signedHeight < 0, bitsPerPixel, pixelOffset, stride, palette, masks };
}

/**
 * Alpha, where a 32-bit image has it, is dropped. Yields to the event loop between slices of rows:
 * an A4 scan at 300 dpi takes 100 ms and more.
 */
export async function decodeBmp(bytes: Buffer): Promise<RgbImage> {
  const layout = readBmpLayout(bytes);
  const { width, height } = layout;
  const data = new Uint8Array(width * height * 3);
  const decodeRow = rowDecoder(bytes, layout);
  const rowsPerSlice = Math.max(1, Math.floor(PIXELS_PER_SLICE / width));
  for (let y = 0; y < height; y++) {
    if (y > 0 && y % rowsPerSlice === 0) await yieldToEventLoop();
    const stored = layout.topDown ? y : height - 1 - y;
    decodeRow(layout.pixelOffset + stored * layout.stride, data, y * width * 3);
  }
  return { width, height, data };
}

type RowDecoder = (rowStart: number, out: Uint8Array, outStart: number) => void;

function rowDecoder(bytes: Buffer, { width, bitsPerPixel, palette, masks }: BmpLayout): RowDecoder {
  if (bitsPerPixel <= 8) {
    const perByte = 8 / bitsPerPixel;
    const indexMask = (1 << bitsPerPixel) - 1;
    return (rowStart, out, outStart) => {
      for (let x = 0, o = outStart; x < width; x++, o += 3) {
        const shift = 8 - bitsPerPixel * ((x % perByte) + 1);
        const index = (bytes[rowStart + Math.floor(x / perByte)] >> shift) & indexMask;
        out[o] = palette[index * 3];
        out[o + 1] = palette[index * 3 + 1];
        out[o + 2] = palette[index * 3 + 2];
      }
    };
  }
  if (bitsPerPixel === 24) {
    return (rowStart, out, outStart) => {
      for (let x = 0, i = rowStart, o = outStart; x < width; x++, i += 3, o += 3) {
        out[o] = bytes[i + 2];
        out[o + 1] = bytes[i + 1];
        out[o + 2] = bytes[i];
      }
    };
  }
  const [red, green, blue] = masks.map(channelFromMask);
  const read =
    bitsPerPixel === 16 ? (i: number) => bytes.readUInt16LE(i) : (i: number) => bytes.readUInt32LE(i);
  const pixelBytes = bitsPerPixel / 8;
  return (rowStart, out, outStart) => {
    for (let x = 0, i = rowStart, o = outStart; x < width; x++, i += pixelBytes, o += 3) {
      const pixel = read(i);
      out[o] = red(pixel);
      out[o + 1] = green(pixel);
      out[o + 2] = blue(pixel);
    }
  };
}

/** The 8-bit value of the channel a bit mask selects (e.g. 5-bit 0x7c00 scaled to 0..255). */
function channelFromMask(mask: number): (pixel: number) => number {
  if (mask === 0) return () => 0;
  const shift = 31 - Math.clz32(mask & -mask);
  const max = mask >>> shift;
  return (pixel) => Math.round((((pixel & mask) >>> shift) * 255) / max);
}
