// Document type by content (magic bytes), never by file name: object keys and uploads lie.
import { UnsupportedDocumentError } from './document-error.js';

export type DocumentType = 'pdf' | 'png' | 'jpeg' | 'webp' | 'gif' | 'bmp' | 'tiff';

const SUPPORTED = 'PDF, PNG, JPEG, WebP, GIF, BMP, TIFF';

/** PDF readers accept a header preceded by junk (mail headers, BOMs) within the first 1024 bytes. */
const PDF_HEADER_WINDOW = 1024;

/** Classic TIFF (42) and BigTIFF (43), little- and big-endian. */
const TIFF_SIGNATURES = [
  [0x49, 0x49, 0x2a, 0x00],
  [0x49, 0x49, 0x2b, 0x00],
  [0x4d, 0x4d, 0x00, 0x2a],
  [0x4d, 0x4d, 0x00, 0x2b],
];

/** Sizes of the BMP info headers in use (core, v1, v2, v3, OS/2 v2, v4, v5). */
const BMP_INFO_HEADER_SIZES = new Set([12, 40, 52, 56, 64, 108, 124]);

export function detectDocumentType(bytes: Buffer): DocumentType {
  const type = imageType(bytes) ?? (hasPdfHeader(bytes) ? 'pdf' : undefined);
  if (type !== undefined) return type;
  throw new UnsupportedDocumentError(
    `${describeUnsupported(bytes)} is not a supported document (${SUPPORTED})`,
  );
}

function imageType(bytes: Buffer): DocumentType | undefined {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'gif';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'webp';
  if (TIFF_SIGNATURES.some((signature) => startsWith(bytes, signature))) return 'tiff';
  // "BM" alone is too weak (a text file may start with it): also require a known info-header size.
  const bmpInfoHeaderSize = bytes.length >= 18 ? bytes.readUInt32LE(14) : 0;
  if (ascii(bytes, 0, 2) === 'BM' && BMP_INFO_HEADER_SIZES.has(bmpInfoHeaderSize)) return 'bmp';
  return undefined;
}

function hasPdfHeader(bytes: Buffer): boolean {
  return bytes.subarray(0, PDF_HEADER_WINDOW).includes('%PDF-', 0, 'latin1');
}

/** Names common content that is not supported, so the reason tells the user what they sent. */
function describeUnsupported(bytes: Buffer): string {
  if (bytes.length === 0) return 'empty content (0 bytes)';
  if (['PK\x03\x04', 'PK\x05\x06'].includes(ascii(bytes, 0, 4))) return 'application/zip content';
  if (startsWith(bytes, [0x1f, 0x8b])) return 'application/gzip content';
  if (ascii(bytes, 257, 262) === 'ustar') return 'application/x-tar content';
  if (ascii(bytes, 4, 8) === 'ftyp') return `HEIF/AVIF/MP4 content (brand "${ascii(bytes, 8, 12)}")`;
  if (startsWith(bytes, [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20])) return 'image/jp2 content';
  if (looksLikeText(bytes)) return 'text/plain content';
  const head = [...bytes.subarray(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
  return `unrecognised content (first bytes ${head})`;
}

/** UTF-8 without control characters other than tab, line feed, form feed and carriage return. */
function looksLikeText(bytes: Buffer): boolean {
  const sample = bytes.subarray(0, 4096);
  try {
    // stream: true keeps a multi-byte character cut by the sample's end from counting as invalid.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
    return !/[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(text);
  } catch {
    return false;
  }
}

function startsWith(bytes: Buffer, signature: number[]): boolean {
  return bytes.length >= signature.length && signature.every((b, i) => bytes[i] === b);
}

function ascii(bytes: Buffer, start: number, end: number): string {
  return bytes.toString('latin1', start, Math.min(end, bytes.length));
}
