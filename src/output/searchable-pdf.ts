// A searchable PDF of an assembled document: the original PDF's pages (or, for an image document, the
// images as pages) with the recognised text laid over them invisibly (text render mode 3) at each
// block's grounding box, so that viewers can search and select it and pdftotext extracts it. Pages
// without boxed blocks get their markdown as one invisible paragraph at the top. Unicode needs an
// embedded font: $SCRIPTORIUM_PDF_FONT, else DejaVu Sans where Debian installs it (fonts-dejavu-core);
// without either, characters outside WinAnsi become '?'.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

import fontkit from '@pdf-lib/fontkit';
import {
  degrees,
  PDFDocument,
  PDFNumber,
  PDFOperator,
  PDFOperatorNames,
  popGraphicsState,
  pushGraphicsState,
  setTextRenderingMode,
  StandardFonts,
  TextRenderingMode,
  type PDFFont,
  type PDFPage,
} from 'pdf-lib';
import sharp from 'sharp';

import type { DocumentResultJson, PageResultJson } from '../jobs/result-json.js';
import { documentKeys, documentResultKeys } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';

const DEJAVU_SANS = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';
/** Font size as a share of a text line's box height, and the baseline's height above the line's bottom. */
const FONT_SIZE_OF_LINE = 0.8;
const BASELINE_RISE = 0.2;

/** The searchable PDF of an assembled document: its document.json, its done pages' JSONs, its staged source. */
export async function searchablePdf(docId: string, storage: Storage): Promise<Uint8Array> {
  const keys = documentResultKeys(docId);
  const document = JSON.parse((await storage.get(keys.json)).toString('utf8')) as DocumentResultJson;
  const source = await storage.get(documentKeys(docId, document.source.type).source);
  const pdf = document.source.type === 'pdf' ? await openOriginal(source) : await PDFDocument.create();
  pdf.registerFontkit(fontkit);
  const font = await textFont(pdf);
  const supported = new Set(font.getCharacterSet());
  const text: TextLayerFont = { font, encodable: (line) => [...line].map((char) => (supported.has(char.codePointAt(0) as number) ? char : '?')).join('') };
  for (let number = 1; number <= document.source.pages; number++) {
    const done = document.pages.find((page) => page.page === number);
    const result = done === undefined ? undefined : (JSON.parse((await storage.get(done.key)).toString('utf8')) as PageResultJson);
    const page = document.source.type === 'pdf' ? pdf.getPage(number - 1) : await addImagePage(pdf, source, document.source.type, number, result);
    if (result !== undefined) drawTextLayer(page, result, text);
  }
  return pdf.save();
}

interface TextLayerFont {
  font: PDFFont;
  /** The line as the font can encode it: characters it cannot become '?'. */
  encodable(line: string): string;
}

/** The document cannot become a searchable PDF (its PDF cannot be rewritten). */
export class SearchablePdfError extends Error {
  override readonly name = 'SearchablePdfError';
}

async function openOriginal(bytes: Buffer): Promise<PDFDocument> {
  try {
    return await PDFDocument.load(bytes, { updateMetadata: false });
  } catch (error) {
    throw new SearchablePdfError(`the original PDF cannot be rewritten (${(error as Error).message}): a searchable PDF needs an unencrypted, readable PDF`);
  }
}

async function textFont(pdf: PDFDocument): Promise<PDFFont> {
  const path = process.env.SCRIPTORIUM_PDF_FONT?.trim() || (existsSync(DEJAVU_SANS) ? DEJAVU_SANS : undefined);
  if (path === undefined) return pdf.embedFont(StandardFonts.Helvetica);
  return pdf.embedFont(await readFile(path), { subset: true });
}

/** The image page `number` (1-based) as a page one point per pixel. */
async function addImagePage(pdf: PDFDocument, source: Buffer, type: string, number: number, result: PageResultJson | undefined): Promise<PDFPage> {
  const png = await sharp(source, type === 'tiff' || type === 'gif' ? { page: number - 1 } : {}).rotate().png().toBuffer();
  const image = await pdf.embedPng(png);
  const width = result?.render.width ?? image.width;
  const height = result?.render.height ?? image.height;
  const page = pdf.addPage([width, height]);
  page.drawImage(image, { x: 0, y: 0, width, height });
  return page;
}

/** The page's blocks as invisible text at their boxes; without any box, its markdown at the top. */
function drawTextLayer(page: PDFPage, result: PageResultJson, font: TextLayerFont): void {
  const place = pixelsToPage(page, result);
  page.pushOperators(pushGraphicsState(), setTextRenderingMode(TextRenderingMode.Invisible));
  const boxed = result.blocks.filter((block) => block.box !== undefined && block.text.trim() !== '');
  if (boxed.length === 0) {
    drawLines(page, font, place, result.markdown, [0, 0, result.render.width, Math.min(result.render.height, 24 * result.markdown.split('\n').length)]);
  }
  for (const block of boxed) drawLines(page, font, place, block.text, block.box as [number, number, number, number]);
  page.pushOperators(popGraphicsState());
}

type Place = (x: number, y: number) => { x: number; y: number; scale: number; rotation: number };

/**
 * Pixel (x right, y down) of the rendered image -> the page's user space (y up), through the page's
 * crop box and rotation, which the renderer applied.
 */
function pixelsToPage(page: PDFPage, result: PageResultJson): Place {
  const crop = page.getCropBox();
  const rotation = ((page.getRotation().angle % 360) + 360) % 360;
  const turned = rotation === 90 || rotation === 270;
  const shownWidth = turned ? crop.height : crop.width;
  const scale = shownWidth / result.render.width;
  return (px, py) => {
    const u = px * scale;
    const v = py * scale;
    const [x, y] =
      rotation === 90 ? [v, u] : rotation === 180 ? [crop.width - u, v] : rotation === 270 ? [crop.width - v, crop.height - u] : [u, crop.height - v];
    return { x: crop.x + x, y: crop.y + y, scale, rotation };
  };
}

/** `text`'s lines spread over the box's height, each as wide as the box, baselines a fifth above each line's bottom. */
function drawLines(page: PDFPage, { font, encodable }: TextLayerFont, place: Place, text: string, [x0, y0, x1, y1]: [number, number, number, number]): void {
  const lines = text.split('\n').map((line) => encodable(line.trim())).filter((line) => line !== '');
  const lineHeight = (y1 - y0) / Math.max(1, lines.length);
  lines.forEach((line, index) => {
    const baseline = place(x0, y0 + (index + 1 - BASELINE_RISE) * lineHeight);
    const heightPt = lineHeight * baseline.scale;
    const widthPt = (x1 - x0) * baseline.scale;
    const size = Math.max(1, heightPt * FONT_SIZE_OF_LINE);
    // Stretched or squeezed to the box's width, so that selections cover what they select.
    const stretch = (100 * widthPt) / Math.max(font.widthOfTextAtSize(line, size), 1e-6);
    page.pushOperators(PDFOperator.of(PDFOperatorNames.SetTextHorizontalScaling, [PDFNumber.of(stretch)]));
    page.drawText(line, { x: baseline.x, y: baseline.y, size, font, rotate: degrees(baseline.rotation) });
  });
}
