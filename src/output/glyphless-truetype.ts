// A TrueType font program with no outlines: two empty glyphs (.notdef and the one every character of
// a searchable PDF's invisible text layer maps to), 1000 units per em, ascent 800, descent 200. The
// text layer's characters come from its ToUnicode map, never from this font, so any script fits.
/** Units per em; every glyph advances one em. */
export const GLYPHLESS_UNITS_PER_EM = 1000;
export const GLYPHLESS_ASCENT = 800;
export const GLYPHLESS_DESCENT = -200;
/** The PostScript name, also the PDF font's BaseFont. */
export const GLYPHLESS_FONT_NAME = 'GlyphLessFont';

const GLYPH_COUNT = 2;

/** The font program's bytes: the same every time. */
export function glyphlessTrueType(): Uint8Array {
  return sfnt([
    ['OS/2', os2Table()],
    ['cmap', cmapTable()],
    // No glyph has an outline: every glyf entry is empty, so the table is too.
    ['glyf', new Uint8Array(0)],
    ['head', headTable()],
    ['hhea', hheaTable()],
    ['hmtx', table((out) => repeat(GLYPH_COUNT, () => out.u16(GLYPHLESS_UNITS_PER_EM).i16(0)))],
    ['loca', table((out) => repeat(GLYPH_COUNT + 1, () => out.u16(0)))],
    ['maxp', maxpTable()],
    ['name', nameTable()],
    ['post', table((out) => out.u32(0x0003_0000).u32(0).i16(-100).i16(50).u32(1).u32(0).u32(0).u32(0).u32(0))],
  ]);
}

/** Big-endian writer of a table's fields. */
class TableWriter {
  readonly bytes: number[] = [];

  u8(value: number): this {
    this.bytes.push(value & 0xff);
    return this;
  }

  u16(value: number): this {
    return this.u8(value >>> 8).u8(value);
  }

  i16(value: number): this {
    return this.u16(value & 0xffff);
  }

  u32(value: number): this {
    return this.u16(value >>> 16).u16(value & 0xffff);
  }
}

function table(write: (out: TableWriter) => unknown): Uint8Array {
  const out = new TableWriter();
  write(out);
  return Uint8Array.from(out.bytes);
}

function repeat(times: number, write: () => unknown): void {
  for (let index = 0; index < times; index++) write();
}

function headTable(): Uint8Array {
  return table((out) => {
    out.u32(0x0001_0000).u32(0x0001_0000);
    out.u32(0); // checkSumAdjustment, set once the whole font is laid out
    out.u32(0x5f0f_3cf5);
    out.u16(0b1011); // baseline at y=0, left sidebearing at x=0, integer scaling
    out.u16(GLYPHLESS_UNITS_PER_EM);
    out.u32(0).u32(0).u32(0).u32(0); // created and modified: 1904-01-01, so the bytes never change
    out.i16(0).i16(0).i16(0).i16(0); // the glyphs' bounding box: no outline anywhere
    out.u16(0); // macStyle
    out.u16(3); // lowestRecPPEM
    out.i16(2); // fontDirectionHint
    out.i16(0); // indexToLocFormat: short offsets
    out.i16(0); // glyphDataFormat
  });
}

function hheaTable(): Uint8Array {
  return table((out) => {
    out.u32(0x0001_0000);
    out.i16(GLYPHLESS_ASCENT).i16(GLYPHLESS_DESCENT).i16(0);
    out.u16(GLYPHLESS_UNITS_PER_EM); // advanceWidthMax
    out.i16(0).i16(0).i16(0); // min left and right sidebearings, xMaxExtent
    out.i16(1).i16(0).i16(0); // caret: vertical
    out.i16(0).i16(0).i16(0).i16(0); // reserved
    out.i16(0); // metricDataFormat
    out.u16(GLYPH_COUNT); // numberOfHMetrics
  });
}

function maxpTable(): Uint8Array {
  return table((out) => {
    out.u32(0x0001_0000).u16(GLYPH_COUNT);
    // maxPoints, maxContours, the composite maxima, then maxZones 2 and the instruction maxima.
    out.u16(0).u16(0).u16(0).u16(0).u16(2);
    repeat(8, () => out.u16(0));
  });
}

/** A Windows Unicode cmap that maps no character: the PDF addresses glyphs by CID, not by character. */
function cmapTable(): Uint8Array {
  return table((out) => {
    out.u16(0).u16(1); // version, one subtable
    out.u16(3).u16(1).u32(12); // Windows, Unicode BMP, right after this header
    // Format 4 with only its closing segment 0xFFFF.
    out.u16(4).u16(24).u16(0); // format, length, language
    out.u16(2).u16(2).u16(0).u16(0); // segCountX2, searchRange, entrySelector, rangeShift
    out.u16(0xffff).u16(0).u16(0xffff).i16(1).u16(0); // endCode, reservedPad, startCode, idDelta, idRangeOffset
  });
}

function nameTable(): Uint8Array {
  const names: [id: number, text: string][] = [
    [1, GLYPHLESS_FONT_NAME],
    [2, 'Regular'],
    [4, GLYPHLESS_FONT_NAME],
    [6, GLYPHLESS_FONT_NAME],
  ];
  const encoded = names.map(([, text]) => utf16be(text));
  return table((out) => {
    out.u16(0).u16(names.length).u16(6 + 12 * names.length);
    let offset = 0;
    names.forEach(([id], index) => {
      out.u16(3).u16(1).u16(0x0409).u16(id).u16(encoded[index].length).u16(offset);
      offset += encoded[index].length;
    });
    for (const text of encoded) for (const byte of text) out.u8(byte);
  });
}

function os2Table(): Uint8Array {
  return table((out) => {
    out.u16(4); // version
    out.i16(GLYPHLESS_UNITS_PER_EM); // xAvgCharWidth
    out.u16(400).u16(5); // weight regular, width normal
    out.u16(0); // fsType: installable embedding
    for (const value of [650, 600, 0, 75, 650, 600, 0, 350]) out.i16(value); // subscript and superscript
    out.i16(50).i16(300); // strikeout size and position
    out.i16(0); // sFamilyClass
    repeat(10, () => out.u8(0)); // panose
    out.u32(0).u32(0).u32(0).u32(0); // ulUnicodeRange
    for (const char of 'NONE') out.u8(char.charCodeAt(0)); // achVendID
    out.u16(0x0040); // fsSelection: regular
    out.u16(0xffff).u16(0xffff); // first and last character the cmap maps
    out.i16(GLYPHLESS_ASCENT).i16(GLYPHLESS_DESCENT).i16(0); // typographic ascender, descender, line gap
    out.u16(GLYPHLESS_ASCENT).u16(-GLYPHLESS_DESCENT); // Windows ascent and descent
    out.u32(0).u32(0); // ulCodePageRange
    out.i16(0).i16(0); // x-height, cap height
    out.u16(0).u16(0x20).u16(0); // default character, break character, max context
  });
}

function utf16be(text: string): number[] {
  return [...text].flatMap((char) => {
    const unit = char.charCodeAt(0);
    return [unit >>> 8, unit & 0xff];
  });
}

/** The tables (in tag order) behind an sfnt header and table directory, each 4-byte aligned, with their checksums. */
function sfnt(tables: [tag: string, data: Uint8Array][]): Uint8Array {
  const directorySize = 12 + 16 * tables.length;
  const offsets: number[] = [];
  let size = directorySize;
  for (const [, data] of tables) {
    offsets.push(size);
    size += padded(data.length);
  }
  const font = new Uint8Array(size);
  const view = new DataView(font.buffer);
  const power = 2 ** Math.floor(Math.log2(tables.length));
  view.setUint32(0, 0x0001_0000);
  view.setUint16(4, tables.length);
  view.setUint16(6, power * 16);
  view.setUint16(8, Math.log2(power));
  view.setUint16(10, tables.length * 16 - power * 16);
  tables.forEach(([tag, data], index) => {
    const record = 12 + 16 * index;
    for (let i = 0; i < 4; i++) view.setUint8(record + i, tag.charCodeAt(i));
    view.setUint32(record + 4, checksum(data));
    view.setUint32(record + 8, offsets[index]);
    view.setUint32(record + 12, data.length);
    font.set(data, offsets[index]);
  });
  const head = offsets[tables.findIndex(([tag]) => tag === 'head')];
  view.setUint32(head + 8, (0xb1b0_afba - checksum(font)) >>> 0);
  return font;
}

function padded(length: number): number {
  return Math.ceil(length / 4) * 4;
}

/** The sum of the data's big-endian 32-bit words, zero-padded, modulo 2^32. */
function checksum(data: Uint8Array): number {
  const words = new Uint8Array(padded(data.length));
  words.set(data);
  const view = new DataView(words.buffer);
  let sum = 0;
  for (let offset = 0; offset < words.length; offset += 4) sum = (sum + view.getUint32(offset)) >>> 0;
  return sum;
}
