// The pixel size a PDF page is rendered at: from a resolution, or from the length of its longer side.
import type { RgbImage } from './rgb-image.js';


/** A PDF page's size in points (1/72 inch), its rotation applied: the page as a viewer shows it. */
export interface PdfPagePoints {
  width: number;
  height: number;
}

/** A rendered PDF page and the size in points it was rendered from. */
export type RenderedPdfPage = RgbImage & { pagePoints: PdfPagePoints };

/** Give one of dpi or longestSide; with neither, pages render at DEFAULT_PDF_DPI. */
export interface PdfRenderSize {
  /** Dots per inch (a PDF point is 1/72 inch). */
  dpi?: number;
  /** Pixels on the page's longer side; the shorter side keeps the page's aspect ratio. */
  longestSide?: number;
}

/** The resolution of the official DeepSeek-OCR V1 PDF script. */
export const DEFAULT_PDF_DPI = 144;

/**
 * A page larger than this (a poster at a high dpi) renders scaled down to fit: the OCR engine
 * downsizes pages far below it anyway, and PDFium's 32-bit WebAssembly heap would run out.
 */
export const MAX_RENDER_PIXELS = 40_000_000;

/** Throws a RangeError for sizes that are a caller's mistake rather than a document's. */
export function checkPdfRenderSize({ dpi, longestSide }: PdfRenderSize): void {
  if (dpi !== undefined && longestSide !== undefined) {
    throw new RangeError('give either dpi or longestSide, not both');
  }
  if (dpi !== undefined && !(Number.isFinite(dpi) && dpi > 0)) {
    throw new RangeError(`dpi must be a positive number, got ${dpi}`);
  }
  if (longestSide !== undefined && !(Number.isInteger(longestSide) && longestSide > 0)) {
    throw new RangeError(`longestSide must be a positive integer, got ${longestSide}`);
  }
}

/** Pixel size of a page of widthPt × heightPt points (its rotation already applied). */
export function pdfPagePixels(
  widthPt: number,
  heightPt: number,
  { dpi, longestSide }: PdfRenderSize,
): { width: number; height: number } {
  const scale =
    longestSide !== undefined ? longestSide / Math.max(widthPt, heightPt) : (dpi ?? DEFAULT_PDF_DPI) / 72;
  const width = widthPt * scale;
  const height = heightPt * scale;
  if (width * height <= MAX_RENDER_PIXELS) {
    return { width: Math.max(1, Math.round(width)), height: Math.max(1, Math.round(height)) };
  }
  const shrink = Math.sqrt(MAX_RENDER_PIXELS / (width * height));
  return { width: Math.max(1, Math.floor(width * shrink)), height: Math.max(1, Math.floor(height * shrink)) };
}
