// A searchable PDF of an assembled document: the original PDF's pages (or, for an image document, the
// images as pages) with the recognised text laid over them invisibly (text render mode 3) at each
// block's grounding box, so that viewers can search and select it and pdftotext extracts it. Pages
// without boxed blocks get their markdown as one invisible paragraph at the top. The text is shown in
// a glyph-less font whose ToUnicode map carries every character (text-layer-font.ts), so no font file
// is needed and no script is lost; right-to-left lines are stored in visual order (visual-order.ts).
// A page of the original PDF that already has extractable text keeps it as its only text layer,
// unless the reading is asked for on every page (textLayer 'add').
import {
  beginText,
  endText,
  PDFDocument,
  PDFNumber,
  PDFOperator,
  PDFOperatorNames,
  popGraphicsState,
  pushGraphicsState,
  rotateAndSkewTextRadiansAndTranslate,
  setFontAndSize,
  setTextRenderingMode,
  showText,
  TextRenderingMode,
  type PDFName,
  type PDFPage,
  type PDFRef,
} from 'pdf-lib';
import sharp from 'sharp';

import { DocumentError, pdfPagesWithText } from '../documents/document.js';
import type { DocumentResultJson, PageResultJson } from '../jobs/result-json.js';
import { documentKeys, documentResultKeys } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { GLYPHLESS_DESCENT, GLYPHLESS_UNITS_PER_EM } from './glyphless-truetype.js';
import { TextLayerFonts, textUnits } from './text-layer-font.js';
import { visualOrder } from './visual-order.js';

/** The baseline's height above a text line's bottom, as a share of the line: the font's descent. */
const BASELINE_RISE = -GLYPHLESS_DESCENT / GLYPHLESS_UNITS_PER_EM;

/**
 * What becomes of a PDF page that already has extractable text: `keep` lays no second text layer over
 * it, `add` lays the reading over it all the same (its text is then found twice). Removing a page's
 * own text is not offered: it is drawn by the page's content streams and forms, entangled with
 * everything else they draw.
 */
export const TEXT_LAYERS = ['keep', 'add'] as const;
export type TextLayer = (typeof TEXT_LAYERS)[number];

export interface SearchablePdfOptions {
  /** Default `keep`. */
  textLayer?: TextLayer;
}

/** The searchable PDF of an assembled document: its document.json, its done pages' JSONs, its staged source. */
export async function searchablePdf(docId: string, storage: Storage, { textLayer = 'keep' }: SearchablePdfOptions = {}): Promise<Uint8Array> {
  const keys = documentResultKeys(docId);
  const document = JSON.parse((await storage.get(keys.json)).toString('utf8')) as DocumentResultJson;
  const source = await storage.get(documentKeys(docId, document.source.type).source);
  const pdf = document.source.type === 'pdf' ? await openOriginal(source) : await PDFDocument.create();
  const hasText = document.source.type === 'pdf' && textLayer === 'keep' ? await pagesWithText(source) : [];
  const fonts = new TextLayerFonts(pdf);
  for (let number = 1; number <= document.source.pages; number++) {
    const done = document.pages.find((page) => page.page === number);
    const result = done === undefined ? undefined : (JSON.parse((await storage.get(done.key)).toString('utf8')) as PageResultJson);
    const page = document.source.type === 'pdf' ? pdf.getPage(number - 1) : await addImagePage(pdf, source, document.source.type, number, result);
    if (result !== undefined && hasText[number - 1] !== true) drawTextLayer(new PageText(page, fonts), result);
  }
  fonts.write();
  return pdf.save();
}

/** The document cannot become a searchable PDF (its PDF cannot be rewritten, or its own text cannot be looked for). */
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

/** For each page of the original, whether it already has extractable text (found by PDFium, off the event loop). */
async function pagesWithText(source: Buffer): Promise<boolean[]> {
  try {
    return await pdfPagesWithText(source);
  } catch (error) {
    if (error instanceof DocumentError) throw new SearchablePdfError(`the original PDF's own text cannot be found (${error.reason}); the text layer \`add\` lays the reading over every page without looking`);
    throw error;
  }
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

/** A page being given its text layer: the text-layer fonts, each added to the page's resources once. */
class PageText {
  readonly #names = new Map<PDFRef, PDFName>();

  constructor(
    readonly pdfPage: PDFPage,
    readonly fonts: TextLayerFonts,
  ) {}

  fontName(font: PDFRef): PDFName {
    let name = this.#names.get(font);
    if (name === undefined) {
      name = this.pdfPage.node.newFontDictionary('TextLayer', font);
      this.#names.set(font, name);
    }
    return name;
  }
}

/** The page's blocks as invisible text at their boxes; without any box, its markdown at the top. */
function drawTextLayer(page: PageText, result: PageResultJson): void {
  const place = pixelsToPage(page.pdfPage, result);
  page.pdfPage.pushOperators(pushGraphicsState(), setTextRenderingMode(TextRenderingMode.Invisible));
  const boxed = result.blocks.filter((block) => block.box !== undefined && block.text.trim() !== '');
  if (boxed.length === 0) {
    drawLines(page, place, result.markdown, [0, 0, result.render.width, Math.min(result.render.height, 24 * result.markdown.split('\n').length)]);
  }
  for (const block of boxed) drawLines(page, place, block.text, block.box as [number, number, number, number]);
  page.pdfPage.pushOperators(popGraphicsState());
}

function setTextHorizontalScaling(percent: number): PDFOperator {
  return PDFOperator.of(PDFOperatorNames.SetTextHorizontalScaling, [PDFNumber.of(percent)]);
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

/** `text`'s lines spread over the box's height, each as wide as the box, each baseline the font's descent above its line's bottom. */
function drawLines(page: PageText, place: Place, text: string, [x0, y0, x1, y1]: [number, number, number, number]): void {
  const lines = text.split('\n').map((line) => visualOrder(textUnits(line.trim()))).filter((units) => units.length > 0);
  const lineHeight = (y1 - y0) / Math.max(1, lines.length);
  lines.forEach((units, index) => {
    const baseline = place(x0, y0 + (index + 1 - BASELINE_RISE) * lineHeight);
    const size = Math.max(1, lineHeight * baseline.scale);
    const widthPt = (x1 - x0) * baseline.scale;
    // Every unit advances one em: stretched or squeezed to the box's width, so that selections cover what they select.
    const stretch = (100 * widthPt) / (units.length * size);
    const radians = (baseline.rotation * Math.PI) / 180;
    page.pdfPage.pushOperators(
      beginText(),
      setTextHorizontalScaling(stretch),
      rotateAndSkewTextRadiansAndTranslate(radians, 0, 0, baseline.x, baseline.y),
      ...page.fonts.encode(units).flatMap(({ font, cids }) => [setFontAndSize(page.fontName(font), size), showText(cids)]),
      endText(),
    );
  });
}
