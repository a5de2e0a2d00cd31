// The glyph-less TrueType program: a well-formed sfnt (table directory, table checksums, the head
// table's whole-font checksum) that a font parser reads as two empty glyphs with the metrics the PDF
// font declares.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import fontkit from '@pdf-lib/fontkit';

import { GLYPHLESS_ASCENT, GLYPHLESS_DESCENT, GLYPHLESS_FONT_NAME, GLYPHLESS_UNITS_PER_EM, glyphlessTrueType } from '../../src/output/glyphless-truetype.js';

/** The sum of the big-endian 32-bit words of bytes[start, end), zero-padded, modulo 2^32. */
function checksum(bytes: Uint8Array, start: number, end: number): number {
  const padded = new Uint8Array(Math.ceil((end - start) / 4) * 4);
  padded.set(bytes.subarray(start, end));
  const view = new DataView(padded.buffer);
  let sum = 0;
  for (let offset = 0; offset < padded.length; offset += 4) sum = (sum + view.getUint32(offset)) >>> 0;
  return sum;
}

/** The sizes the specification fixes: head, hhea, maxp 1.0, post 3.0, OS/2 4. */
const FIXED_SIZES: Record<string, number> = { head: 54, hhea: 36, maxp: 32, post: 32, 'OS/2': 96 };

test('every table is in the directory, in tag order, aligned, of its size and with its checksum; the font sums to the magic number', () => {
  const font = glyphlessTrueType();
  const view = new DataView(font.buffer, font.byteOffset, font.byteLength);
  assert.equal(view.getUint32(0), 0x0001_0000, 'TrueType outlines');
  const count = view.getUint16(4);
  const tags: string[] = [];
  for (let index = 0; index < count; index++) {
    const record = 12 + 16 * index;
    const tag = String.fromCharCode(...font.subarray(record, record + 4));
    const offset = view.getUint32(record + 8);
    const length = view.getUint32(record + 12);
    tags.push(tag);
    assert.equal(offset % 4, 0, `${tag} is 4-byte aligned`);
    assert.ok(offset + length <= font.length, `${tag} lies inside the font`);
    if (tag in FIXED_SIZES) assert.equal(length, FIXED_SIZES[tag], `${tag}'s size`);
    // head's checksum is taken with its checkSumAdjustment as zero.
    const sum = tag === 'head' ? (checksum(font, offset, offset + length) - view.getUint32(offset + 8)) >>> 0 : checksum(font, offset, offset + length);
    assert.equal(view.getUint32(record + 4), sum, `${tag}'s checksum`);
  }
  assert.deepEqual(tags, ['OS/2', 'cmap', 'glyf', 'head', 'hhea', 'hmtx', 'loca', 'maxp', 'name', 'post']);
  assert.deepEqual(tags, [...tags].sort(), 'the directory is sorted by tag');
  assert.equal(checksum(font, 0, font.length), 0xb1b0_afba);
  assert.deepEqual(glyphlessTrueType(), font, 'the same bytes every time');
});

test('a font parser reads two empty glyphs, one em wide, with the declared ascent and descent', () => {
  const font = fontkit.create(Buffer.from(glyphlessTrueType()));
  assert.equal(font.postscriptName, GLYPHLESS_FONT_NAME);
  assert.equal(font.numGlyphs, 2);
  assert.equal(font.unitsPerEm, GLYPHLESS_UNITS_PER_EM);
  assert.deepEqual([font.ascent, font.descent], [GLYPHLESS_ASCENT, GLYPHLESS_DESCENT]);
  for (const id of [0, 1]) {
    const glyph = font.getGlyph(id);
    assert.equal(glyph.advanceWidth, GLYPHLESS_UNITS_PER_EM);
    assert.equal(glyph.path.toSVG(), '', `glyph ${id} has no outline`);
  }
});
