// Document type by content: every supported format, and clear reasons for what is not supported.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DocumentError, UnsupportedDocumentError } from '../../src/documents/document-error.js';
import { detectDocumentType, type DocumentType } from '../../src/documents/document-type.js';
import {
  LETTER,
  makeAnimatedGif,
  makeBmp24,
  makeBmp8TopDown,
  makeJpegWithOrientation6,
  makePdf,
  makePng,
  makeText,
  makeTwoPageTiff,
  makeWebp,
  makeZip,
} from '../support/make-documents.js';

function withJunk(junkBytes: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.alloc(junkBytes, 'x'), content]);
}

const formats: Array<[DocumentType, string, () => Buffer | Promise<Buffer>]> = [
  ['pdf', 'a pdf-lib PDF', () => makePdf([LETTER])],
  ['pdf', 'a PDF header after 600 bytes of leading junk', () => withJunk(600, Buffer.from('%PDF-1.4\n'))],
  ['png', 'a PNG', makePng],
  ['jpeg', 'a JPEG', makeJpegWithOrientation6],
  ['webp', 'a WebP', makeWebp],
  ['gif', 'a GIF', makeAnimatedGif],
  ['bmp', 'a 24-bit BMP', makeBmp24],
  ['bmp', 'an 8-bit BMP', makeBmp8TopDown],
  ['tiff', 'a little-endian TIFF', makeTwoPageTiff],
  ['tiff', 'a big-endian TIFF header', () => Buffer.from([0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8])],
  // BigTIFF: version 43, 8-byte offsets, first IFD at 16.
  ['tiff', 'a BigTIFF header', () => Buffer.from([0x49, 0x49, 0x2b, 0x00, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0])],
];

for (const [type, what, make] of formats) {
  test(`${what} is detected as ${type}`, async () => {
    assert.equal(detectDocumentType(await make()), type);
  });
}

test('a %PDF- marker after the first 1024 bytes does not make a PDF', () => {
  assert.throws(() => detectDocumentType(withJunk(1030, Buffer.from('%PDF-1.4\n'))), UnsupportedDocumentError);
});

test('text is rejected as text/plain, naming the supported formats', () => {
  assert.throws(() => detectDocumentType(makeText()), {
    name: 'UnsupportedDocumentError',
    reason: 'text/plain content is not a supported document (PDF, PNG, JPEG, WebP, GIF, BMP, TIFF)',
  });
});

test('text beginning with "BM" is text, not a BMP', () => {
  assert.throws(() => detectDocumentType(Buffer.from('BMW service record, March 2021\n')), /text\/plain/);
});

test('a ZIP archive is rejected as application/zip', () => {
  assert.throws(() => detectDocumentType(makeZip()), /^UnsupportedDocumentError: application\/zip content/);
});

test('empty input is rejected as empty content', () => {
  assert.throws(() => detectDocumentType(Buffer.alloc(0)), /^UnsupportedDocumentError: empty content \(0 bytes\) is/);
});

test('unrecognised binary content is rejected with its first bytes', () => {
  const binary = Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x10, 0x20, 0x30, 0x40]);
  const reason = /^UnsupportedDocumentError: unrecognised content \(first bytes 00 01 02 fe ff 10 20 30\) is/;
  assert.throws(() => detectDocumentType(binary), reason);
});

test('an unsupported document is a DocumentError, so callers record it like any failed document', () => {
  assert.throws(() => detectDocumentType(makeZip()), DocumentError);
});
