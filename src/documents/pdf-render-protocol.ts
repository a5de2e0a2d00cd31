// Messages between PdfRenderer (main thread) and pdf-render-worker.ts (one per worker thread).
import type { PdfRenderSize, RenderedPdfPage } from './pdf-render-size.js';

/** A file the worker reads itself, or bytes transferred to it (the worker owns them). */
export type PdfSource = { path: string } | { bytes: Uint8Array };

export type PdfTask = { kind: 'count' } | { kind: 'render'; pageIndex: number; size: PdfRenderSize } | { kind: 'text' };

export type PdfRequest = PdfTask & { id: number; source: PdfSource; password?: string };

/**
 * `image` is present in replies to 'render', `pagesWithText` in replies to 'text'. `fatal`: the failure was not the document's (a
 * PDFium trap, a bug), so the worker's WebAssembly state is suspect and the worker is replaced.
 */
export type PdfReply =
  | { id: number; ok: true; pageCount: number; /** See PdfDocument.damage. */ damage?: string; image?: RenderedPdfPage; pagesWithText?: boolean[] }
  | { id: number; ok: false; reason: string; fatal: boolean };
