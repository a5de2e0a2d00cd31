// The documents façade: what the CLI, the producer and the workers call. Every failure caused by
// the input is a DocumentError, so a caller records "document failed: <reason>" and goes on.
import { open, readFile } from 'node:fs/promises';

import type { RgbImage } from './rgb-image.js';
import { detectDocumentType, type DocumentType } from './document-type.js';
import { decodeImagePage, imagePageCount } from './image-document.js';
import type { PdfPagePoints, PdfRenderSize } from './pdf-render-size.js';
import { PdfRenderer } from './pdf-renderer.js';

export type { RgbImage } from './rgb-image.js';
export { DocumentError, UnsupportedDocumentError } from './document-error.js';
export type { DocumentType } from './document-type.js';
export type { PdfPagePoints, PdfRenderSize } from './pdf-render-size.js';
export { PdfRenderer, type PdfRendererOptions } from './pdf-renderer.js';
export { openSealedPdfPassword, sealPdfPassword, type SealedPdfPassword } from './sealed-pdf-password.js';

export interface DocumentOptions {
  /** For encrypted PDFs. */
  password?: string;
  /** Where PDFs are opened and rendered; default: one worker thread shared by the process. */
  pdfRenderer?: PdfRenderer;
}

/** dpi / longestSide apply to PDF pages; images decode at their own resolution. */
export interface RenderPageOptions extends DocumentOptions, PdfRenderSize {}

export interface OpenedDocument {
  type: DocumentType;
  pageCount: number;
  /** A damaged PDF that was rebuilt: what is wrong, and how many pages can still be read. */
  damage?: string;
}

let sharedPdfRenderer: PdfRenderer | undefined;

function pdfRendererOf(options: DocumentOptions): PdfRenderer {
  return options.pdfRenderer ?? (sharedPdfRenderer ??= new PdfRenderer());
}

/**
 * A document's bytes, or the path of the local file that holds them. A PDF file is read by the
 * renderer's worker thread, never into this thread's memory; an image file is read whole.
 */
export type DocumentSource = Buffer | string;

/** Bytes enough to tell every supported type (and name common unsupported ones). */
const TYPE_HEAD_BYTES = 4096;

/** Detects the type by content and counts pages; rejects with DocumentError for bad input. */
export async function openDocument(source: DocumentSource, options: DocumentOptions = {}): Promise<OpenedDocument> {
  const type = detectDocumentType(typeof source === 'string' ? await readHead(source) : source);
  if (type === 'pdf') return { type, ...(await pdfRendererOf(options).open(source, { password: options.password })) };
  return { type, pageCount: await imagePageCount(typeof source === 'string' ? await readFile(source) : source, type) };
}

async function readHead(filePath: string): Promise<Buffer> {
  const file = await open(filePath);
  try {
    const head = Buffer.alloc(TYPE_HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, TYPE_HEAD_BYTES, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** For each page of a PDF, whether it already carries extractable text; rejects with DocumentError for bad input. */
export async function pdfPagesWithText(bytes: Buffer, options: DocumentOptions = {}): Promise<boolean[]> {
  return pdfRendererOf(options).pagesWithText(bytes, { password: options.password });
}

/** One page as 8-bit RGB; `type` as openDocument returned it. */
export async function renderPage(
  bytes: Buffer,
  type: DocumentType,
  pageIndex: number,
  options: RenderPageOptions = {},
): Promise<RgbImage & { pagePoints?: PdfPagePoints }> {
  if (type !== 'pdf') return decodeImagePage(bytes, type, pageIndex);
  const { password, dpi, longestSide } = options;
  return pdfRendererOf(options).render(bytes, pageIndex, { password, dpi, longestSide });
}
