// The fonts of a searchable PDF's invisible text layer, written with pdf-lib's low-level objects: Type0
// fonts (Identity-H) over the glyph-less TrueType program, as OCR tools carry their text layers. Each
// distinct text unit (a grapheme cluster: a character with its combining marks, an emoji sequence) gets
// a 2-byte CID when it is first drawn, and a ToUnicode CMap maps every CID back to its UTF-16 text
// (astral characters as surrogate pairs), so text of any script extracts as it was read. Every CID
// advances one em. A font holds 65,535 CIDs; a document with more distinct units gets further fonts.
import { PDFHexString, PDFName, PDFString, type PDFDocument, type PDFRef } from 'pdf-lib';

import { GLYPHLESS_ASCENT, GLYPHLESS_DESCENT, GLYPHLESS_FONT_NAME, GLYPHLESS_UNITS_PER_EM, glyphlessTrueType } from './glyphless-truetype.js';

/** CID 0 is .notdef; the units take 1…65535. */
const CIDS_PER_FONT = 0xffff;
/** A longer grapheme cluster is split into its code points: a ToUnicode target holds at most 512 bytes. */
const MAX_UNIT_UTF16 = 32;
/** Entries per bfchar block, the most a CMap block may hold. */
const BFCHAR_BLOCK = 100;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The line's text units in logical order: its grapheme clusters. */
export function textUnits(line: string): string[] {
  return [...graphemes.segment(line)].flatMap(({ segment }) => (segment.length <= MAX_UNIT_UTF16 ? [segment] : [...segment]));
}

/** Consecutive units of a line shown with one font: the font's object and the units' CIDs. */
export interface FontRun {
  font: PDFRef;
  cids: PDFHexString;
}

interface LayerFont {
  ref: PDFRef;
  /** The text of CID i + 1. */
  units: string[];
}

export class TextLayerFonts {
  readonly #pdf: PDFDocument;
  readonly #fonts: LayerFont[] = [];
  readonly #cidOf = new Map<string, { font: LayerFont; cid: number }>();

  constructor(pdf: PDFDocument) {
    this.#pdf = pdf;
  }

  /** The units as runs of CIDs, each run in one font; new units get the next free CID. */
  encode(units: string[]): FontRun[] {
    const runs: { font: LayerFont; hex: string }[] = [];
    for (const unit of units) {
      const { font, cid } = this.#cidOf.get(unit) ?? this.#newCid(unit);
      const hex = hex4(cid);
      const last = runs.at(-1);
      if (last?.font === font) last.hex += hex;
      else runs.push({ font, hex });
    }
    return runs.map(({ font, hex }) => ({ font: font.ref, cids: PDFHexString.of(hex) }));
  }

  /** Writes every font's objects under the references the runs named: once, after the last line. */
  write(): void {
    if (this.#fonts.length === 0) return;
    const { context } = this.#pdf;
    const program = glyphlessTrueType();
    const descriptor = context.register(
      context.obj({
        Type: 'FontDescriptor',
        FontName: GLYPHLESS_FONT_NAME,
        // Fixed pitch, symbolic: its glyphs are no standard character set.
        Flags: 5,
        FontBBox: [0, GLYPHLESS_DESCENT, GLYPHLESS_UNITS_PER_EM, GLYPHLESS_ASCENT],
        ItalicAngle: 0,
        Ascent: GLYPHLESS_ASCENT,
        Descent: GLYPHLESS_DESCENT,
        CapHeight: GLYPHLESS_ASCENT,
        StemV: 80,
        FontFile2: context.register(context.flateStream(program, { Length1: program.length })),
      }),
    );
    for (const font of this.#fonts) {
      const cidFont = context.obj({
        Type: 'Font',
        Subtype: 'CIDFontType2',
        BaseFont: GLYPHLESS_FONT_NAME,
        CIDSystemInfo: { Registry: PDFString.of('Adobe'), Ordering: PDFString.of('Identity'), Supplement: 0 },
        FontDescriptor: descriptor,
        DW: GLYPHLESS_UNITS_PER_EM,
        CIDToGIDMap: context.register(context.flateStream(cidToGlyphMap(font.units.length))),
      });
      const type0 = context.obj({
        Type: 'Font',
        Subtype: 'Type0',
        BaseFont: GLYPHLESS_FONT_NAME,
        Encoding: PDFName.of('Identity-H'),
        DescendantFonts: [context.register(cidFont)],
        ToUnicode: context.register(context.flateStream(toUnicodeCMap(font.units))),
      });
      context.assign(font.ref, type0);
    }
  }

  #newCid(unit: string): { font: LayerFont; cid: number } {
    let font = this.#fonts.at(-1);
    if (font === undefined || font.units.length === CIDS_PER_FONT) {
      font = { ref: this.#pdf.context.nextRef(), units: [] };
      this.#fonts.push(font);
    }
    font.units.push(unit);
    const entry = { font, cid: font.units.length };
    this.#cidOf.set(unit, entry);
    return entry;
  }
}

/** CID 0 to glyph 0 (.notdef), every other CID to glyph 1: two bytes per CID, big-endian. */
function cidToGlyphMap(units: number): Uint8Array {
  const map = new Uint8Array(2 * (units + 1));
  for (let cid = 1; cid <= units; cid++) map[2 * cid + 1] = 1;
  return map;
}

/** The CMap that maps CID i + 1 to units[i], as UTF-16BE (surrogate pairs included). */
function toUnicodeCMap(units: string[]): string {
  const blocks: string[] = [];
  for (let start = 0; start < units.length; start += BFCHAR_BLOCK) {
    const block = units.slice(start, start + BFCHAR_BLOCK);
    const entries = block.map((unit, index) => `<${hex4(start + index + 1)}> <${utf16Hex(unit)}>`);
    blocks.push(`${block.length} beginbfchar\n${entries.join('\n')}\nendbfchar`);
  }
  return [
    '/CIDInit /ProcSet findresource begin',
    '12 dict begin',
    'begincmap',
    '/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def',
    '/CMapName /Adobe-Identity-UCS def',
    '/CMapType 2 def',
    '1 begincodespacerange',
    '<0000> <FFFF>',
    'endcodespacerange',
    ...blocks,
    'endcmap',
    'CMapName currentdict /CMap defineresource pop',
    'end',
    'end',
  ].join('\n');
}

/** The text's UTF-16 code units in hex: an astral character is its surrogate pair. */
function utf16Hex(text: string): string {
  let hex = '';
  for (let index = 0; index < text.length; index++) hex += hex4(text.charCodeAt(index));
  return hex;
}

function hex4(value: number): string {
  return value.toString(16).padStart(4, '0').toUpperCase();
}
