// Test documents made on the fly (nothing binary is committed): PDFs with pdf-lib or written by
// hand (encrypted, corrupt), images with sharp or written by hand (BMP), and non-documents.
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { PDFBool, PDFDocument, PDFName, rgb, StandardFonts } from 'pdf-lib';
import sharp, { type Sharp } from 'sharp';

/** Page sizes in points. */
export const LETTER: [number, number] = [612, 792];
export const A4: [number, number] = [595.28, 841.89];
export const LETTER_LANDSCAPE: [number, number] = [792, 612];

/** The filled black rectangle on every generated PDF page, in points from the top-left corner. */
export const BLACK_RECT_PT = { left: 72, top: 72, width: 144, height: 72 };

/** One page per size: the black rectangle, then lines of text below it. */
export async function makePdf(pageSizes: Array<[number, number]>, linesPerPage = 10): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pageSizes.forEach(([width, height], pageIndex) => {
    const page = pdf.addPage([width, height]);
    const rect = BLACK_RECT_PT;
    const y = height - rect.top - rect.height;
    page.drawRectangle({ x: rect.left, y, width: rect.width, height: rect.height, color: rgb(0, 0, 0) });
    for (let line = 0; line < linesPerPage; line++) {
      const text = `Page ${pageIndex + 1}, line ${line + 1}: the quick brown fox jumps over the lazy dog.`;
      page.drawText(text, { x: 72, y: height - 180 - line * 14, size: 11, font });
    }
  });
  return Buffer.from(await pdf.save());
}

/** Where makePdfWithFormField puts its text field, in points from the top-left corner. */
/** Two three-page Letter reports written into `dir` (3 and 4 lines a page, so different documents); their paths. */
export async function writeThreePageReports(dir: string): Promise<string[]> {
  return Promise.all(
    [3, 4].map(async (lines) => {
      const input = path.join(dir, `report-${lines}.pdf`);
      await writeFile(input, await makePdf([LETTER, LETTER, LETTER], lines));
      return input;
    }),
  );
}

export const FORM_FIELD_PT = { left: 72, top: 152, width: 300, height: 40 };

/**
 * A Letter page with a filled text field but no appearance stream for it (NeedAppearances set), so
 * only a renderer that draws form fields as a viewer does shows the value.
 */
export async function makePdfWithFormField(value: string): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage(LETTER);
  const form = pdf.getForm();
  const field = form.createTextField('name');
  const { left, top, width, height } = FORM_FIELD_PT;
  field.addToPage(page, { x: left, y: LETTER[1] - top - height, width, height, borderWidth: 0 });
  field.setText(value);
  form.acroForm.dict.set(PDFName.of('NeedAppearances'), PDFBool.True);
  for (const widget of field.acroField.getWidgets()) widget.dict.delete(PDFName.of('AP'));
  return Buffer.from(await pdf.save({ updateFieldAppearances: false }));
}

/** A PDF header followed by bytes that are no PDF structure at all. */
export function makeCorruptPdf(): Buffer {
  const garbage = Buffer.alloc(4096);
  for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919 + 13) % 251;
  return Buffer.concat([Buffer.from('%PDF-1.7\n'), garbage]);
}

/** Password padding of the standard security handler (ISO 32000-1, 7.6.3.3). */
const PASSWORD_PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');

/**
 * A one-page Letter PDF with the black rectangle, encrypted by the standard security handler with
 * RC4 40-bit (V 1, R 2): the O and U entries and the content stream computed per ISO 32000-1
 * algorithms 1 to 4. Written by hand because pdf-lib cannot encrypt.
 */
export function makeEncryptedPdf(userPassword: string, ownerPassword = 'owner'): Buffer {
  const permissions = -4; // everything allowed
  const fileId = md5(Buffer.from('scriptorium encrypted test document'));
  const owner = rc4(md5(padPassword(ownerPassword)).subarray(0, 5), padPassword(userPassword));
  const permissionBytes = Buffer.alloc(4);
  permissionBytes.writeInt32LE(permissions);
  const fileKey = md5(padPassword(userPassword), owner, permissionBytes, fileId).subarray(0, 5);
  const user = rc4(fileKey, PASSWORD_PAD);

  const { left, top, width, height } = BLACK_RECT_PT;
  const content = Buffer.from(`0 0 0 rg ${left} ${LETTER[1] - top - height} ${width} ${height} re f\n`);
  const contentObject = 4;
  const objectKey = md5(fileKey, Buffer.from([contentObject, 0, 0, 0, 0])).subarray(0, 10);
  const encryptedContent = rc4(objectKey, content);

  return writePdf(
    [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${LETTER.join(' ')}] /Contents ${contentObject} 0 R >>`,
      Buffer.concat([
        Buffer.from(`<< /Length ${encryptedContent.length} >>\nstream\n`),
        encryptedContent,
        Buffer.from('\nendstream'),
      ]),
      `<< /Filter /Standard /V 1 /R 2 /O <${owner.toString('hex')}> /U <${user.toString('hex')}> ` +
        `/P ${permissions} >>`,
    ],
    `/Root 1 0 R /Encrypt 5 0 R /ID [<${fileId.toString('hex')}> <${fileId.toString('hex')}>]`,
  );
}

/** Objects numbered from 1, then a cross-reference table with exact offsets and the trailer. */
function writePdf(objects: Array<string | Buffer>, trailerEntries: string): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = parts[0].length;
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    const object = Buffer.concat([
      Buffer.from(`${index + 1} 0 obj\n`),
      Buffer.from(body),
      Buffer.from('\nendobj\n'),
    ]);
    offsets.push(length);
    parts.push(object);
    length += object.length;
  });
  const entries = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  const trailer = `trailer\n<< /Size ${objects.length + 1} ${trailerEntries} >>\nstartxref\n${length}\n%%EOF\n`;
  return Buffer.concat([...parts, Buffer.from(xref + trailer)]);
}

function padPassword(password: string): Buffer {
  return Buffer.concat([Buffer.from(password, 'latin1'), PASSWORD_PAD]).subarray(0, 32);
}

function md5(...parts: Buffer[]): Buffer {
  return createHash('md5').update(Buffer.concat(parts)).digest();
}

/** RC4 (Node 20's OpenSSL 3 does not offer it without the legacy provider). */
function rc4(key: Buffer, data: Buffer): Buffer {
  const state = Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + state[i] + key[i % key.length]) & 255;
    [state[i], state[j]] = [state[j], state[i]];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 255;
    j = (j + state[i]) & 255;
    [state[i], state[j]] = [state[j], state[i]];
    out[n] = data[n] ^ state[(state[i] + state[j]) & 255];
  }
  return out;
}

type Colour = { r: number; g: number; b: number };
export const RED: Colour = { r: 255, g: 0, b: 0 };
export const BLUE: Colour = { r: 0, g: 0, b: 255 };

function solid(width: number, height: number, colour: Colour): Sharp {
  return sharp({ create: { width, height, channels: 3, background: colour } });
}

/** 60×40, left half red and right half blue. */
function halves(): Sharp {
  const blueHalf = { width: 30, height: 40, channels: 3 as const, background: BLUE };
  return solid(60, 40, RED).composite([{ input: { create: blueHalf }, left: 30, top: 0 }]);
}

export const makePng = (): Promise<Buffer> => halves().png().toBuffer();
export const makeWebp = (): Promise<Buffer> => halves().webp({ lossless: true }).toBuffer();

/** A 60×40 JPEG (left half red, right half blue) whose EXIF says: rotate 90° clockwise to view. */
export const makeJpegWithOrientation6 = (): Promise<Buffer> =>
  halves().jpeg({ quality: 95 }).withMetadata({ orientation: 6 }).toBuffer();

/** A 4×4 PNG whose pixels are RGB (10, 20, 30) at alpha 0. */
export const makeTransparentPng = (): Promise<Buffer> =>
  sharp({ create: { width: 4, height: 4, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 0 } } })
    .png()
    .toBuffer();

export const makeGrayscalePng = (): Promise<Buffer> =>
  solid(4, 4, { r: 64, g: 64, b: 64 }).greyscale().png().toBuffer();

/** 16 bits per channel: (128, 64, 32) scaled to 16 bits. */
export const makeSixteenBitPng = (): Promise<Buffer> =>
  solid(4, 4, { r: 128, g: 64, b: 32 }).toColourspace('rgb16').png().toBuffer();

export const makeCmykJpeg = (): Promise<Buffer> => solid(4, 4, RED).toColourspace('cmyk').jpeg().toBuffer();

/** 64×32 black, 1 bit per pixel, CCITT group 4: the usual archive scan. */
export const makeBilevelTiff = (): Promise<Buffer> =>
  solid(64, 32, { r: 0, g: 0, b: 0 })
    .toColourspace('b-w')
    .tiff({ bitdepth: 1, compression: 'ccittfax4' })
    .toBuffer();

/** Two 40×30 pages: red, then blue. */
export async function makeTwoPageTiff(): Promise<Buffer> {
  return sharp(await redThenBlue(), { join: { animated: true } }).tiff().toBuffer();
}

/** Two 40×30 frames: red, then blue. */
export async function makeAnimatedGif(): Promise<Buffer> {
  return sharp(await redThenBlue(), { join: { animated: true } }).gif().toBuffer();
}

function redThenBlue(): Promise<Buffer[]> {
  return Promise.all([RED, BLUE].map((colour) => solid(40, 30, colour).png().toBuffer()));
}

/**
 * 5×3 (a width whose rows need padding), 24 bits per pixel, rows stored bottom-up as usual:
 * the top row red, the others blue.
 */
export function makeBmp24(): Buffer {
  const width = 5;
  const height = 3;
  const stride = Math.ceil((width * 3) / 4) * 4;
  const pixels = Buffer.alloc(stride * height);
  for (let stored = 0; stored < height; stored++) {
    const colour = stored === height - 1 ? RED : BLUE; // the last stored row is the top one
    for (let x = 0; x < width; x++) pixels.set([colour.b, colour.g, colour.r], stored * stride + x * 3);
  }
  return bmpFile(width, height, 24, Buffer.alloc(0), pixels);
}

/** 3×2, 8-bit palette (0 red, 1 blue), rows stored top-down (negative height): top row red. */
export function makeBmp8TopDown(): Buffer {
  const palette = Buffer.from([0, 0, 255, 0, 255, 0, 0, 0]); // BGRX entries
  const pixels = Buffer.from([0, 0, 0, 0, 1, 1, 1, 0]); // rows padded to 4 bytes
  return bmpFile(3, -2, 8, palette, pixels);
}

/** A BMP header declaring RLE8 compression. */
export function makeRleBmp(): Buffer {
  const file = bmpFile(2, 2, 8, Buffer.alloc(8), Buffer.alloc(8));
  file.writeUInt32LE(1, 30);
  return file;
}

/** BITMAPFILEHEADER + BITMAPINFOHEADER (40 bytes) + palette + pixel rows. */
function bmpFile(
  width: number,
  height: number,
  bitsPerPixel: number,
  palette: Buffer,
  pixels: Buffer,
): Buffer {
  const header = Buffer.alloc(54);
  const pixelOffset = header.length + palette.length;
  header.write('BM', 0, 'latin1');
  header.writeUInt32LE(pixelOffset + pixels.length, 2);
  header.writeUInt32LE(pixelOffset, 10);
  header.writeUInt32LE(40, 14);
  header.writeInt32LE(width, 18);
  header.writeInt32LE(height, 22);
  header.writeUInt16LE(1, 26);
  header.writeUInt16LE(bitsPerPixel, 28);
  header.writeUInt32LE(palette.length / 4, 46);
  return Buffer.concat([header, palette, pixels]);
}

export const makeText = (): Buffer => Buffer.from('Minutes of the meeting\nAll present.\n');

/** An empty ZIP archive: just its end-of-central-directory record. */
export const makeZip = (): Buffer => Buffer.concat([Buffer.from('PK\x05\x06', 'latin1'), Buffer.alloc(18)]);

/**
 * A 4-page PDF cut off part-way, as a broken download leaves it: no cross-reference table, no
 * trailer, and the objects of its later pages missing. Written without object streams, as scanners
 * and most producers write PDFs, so that its remaining objects can still be found. `keptFraction`
 * of the bytes are kept: 0.6 keeps pages 1 and 2, 0.3 none.
 */
export async function makeTruncatedPdf(keptFraction: number): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let pageIndex = 0; pageIndex < 4; pageIndex++) {
    const page = pdf.addPage(LETTER);
    page.drawRectangle({ x: 72, y: 600, width: 144, height: 72, color: rgb(0, 0, 0) });
    page.drawText(`Page ${pageIndex + 1}`, { x: 72, y: 500, size: 11, font });
  }
  const whole = Buffer.from(await pdf.save({ useObjectStreams: false }));
  return whole.subarray(0, Math.floor(whole.length * keptFraction));
}
