// An open PDF in PDFium (WebAssembly). Synchronous, CPU-heavy work: use it inside a worker thread
// (pdf-render-worker.ts), never on the main event loop.
import { PDFiumLibrary, type PDFiumDocument } from '@hyzyla/pdfium';

import { DocumentError, pageOutOfRange } from './document-error.js';
import { withRebuiltTrailer } from './pdf-repair.js';
import { pdfPagePixels, type PdfRenderSize, type RenderedPdfPage } from './pdf-render-size.js';

/** One PDFium instance per thread, initialised on first use; a failed start is retried next time. */
let library: Promise<PDFiumLibrary> | undefined;

function pdfium(): Promise<PDFiumLibrary> {
  library ??= PDFiumLibrary.init().catch((error: unknown) => {
    library = undefined;
    throw error;
  });
  return library;
}

export class PdfDocument {
  readonly pageCount: number;

  /**
   * @param damage Set when the file was damaged and rebuilt: what was wrong and how many pages can
   *   still be read (the others fail when rendered).
   */
  private constructor(
    private readonly document: PDFiumDocument,
    readonly damage?: string,
  ) {
    this.pageCount = document.getPageCount();
  }

  /**
   * Throws DocumentError for encrypted documents without the right password and for files that are
   * no PDF. A truncated PDF is rebuilt (pdf-repair.ts) and opens with `damage` set, unless none of
   * its pages can be read.
   */
  static async open(bytes: Uint8Array, password?: string): Promise<PdfDocument> {
    const library = await pdfium();
    try {
      return new PdfDocument(await library.loadDocument(bytes, password));
    } catch (error) {
      if (isWasmTrap(error)) throw error;
      const reason = openError(error, password);
      const rebuilt = messageOf(error) === CORRUPT ? withRebuiltTrailer(bytes) : undefined;
      if (rebuilt === undefined) throw reason;
      return PdfDocument.openRebuilt(library, rebuilt, password, reason);
    }
  }

  private static async openRebuilt(library: PDFiumLibrary, rebuilt: Uint8Array, password: string | undefined, original: DocumentError): Promise<PdfDocument> {
    let document: PDFiumDocument;
    try {
      document = await library.loadDocument(rebuilt, password);
    } catch (error) {
      if (isWasmTrap(error)) throw error;
      throw original;
    }
    const pageCount = document.getPageCount();
    let readable = 0;
    for (let index = 0; index < pageCount; index++) if (pageLoads(document, index)) readable++;
    if (readable === 0) {
      document.destroy();
      throw new DocumentError(`damaged PDF: it is truncated or its cross-reference table is broken, and none of its ${pageCount} pages can be read`);
    }
    return new PdfDocument(
      document,
      `damaged PDF: it is truncated or its cross-reference table is broken; rebuilt from its objects, ${readable} of ${pageCount} pages can be read`,
    );
  }

  /** Renders as a viewer shows the page: white background, annotations and form fields drawn. */
  async renderPage(pageIndex: number, size: PdfRenderSize): Promise<RenderedPdfPage> {
    if (!Number.isInteger(pageIndex) || pageIndex < 0 || pageIndex >= this.pageCount) {
      throw pageOutOfRange(pageIndex, this.pageCount);
    }
    // getPage loads the page and the wrapper's render closes it again, on success and on failure.
    // getPage does not check FPDF_LoadPage: a page PDFium cannot load reads as size 0 (and needs no close).
    const page = this.document.getPage(pageIndex);
    const { originalWidth, originalHeight } = page.getOriginalSize();
    if (!(originalWidth > 0 && originalHeight > 0)) {
      throw new DocumentError(`page index ${pageIndex} could not be loaded by PDFium${this.damage === undefined ? '' : ` (${this.damage})`}`);
    }
    const { width, height } = pdfPagePixels(originalWidth, originalHeight, size);
    try {
      // The wrapper scales its floored point size, so pass the pixel size itself with scale 1.
      const rendered = await page.render({ width, height, scale: 1, renderFormFields: true });
      return { width: rendered.width, height: rendered.height, data: rgbaToRgb(rendered.data), pagePoints: { width: originalWidth, height: originalHeight } };
    } catch (error) {
      if (isWasmTrap(error)) throw error;
      throw new DocumentError(`PDFium could not render page index ${pageIndex}: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  /**
   * For each page, whether it already carries extractable text, visible or not (PDFium finds more
   * than whitespace on it); a page PDFium cannot load has none. Every page stays loaded until
   * close(): the wrapper closes a page only when it renders it.
   */
  pagesWithText(): boolean[] {
    return Array.from({ length: this.pageCount }, (_, pageIndex) => {
      try {
        return this.document.getPage(pageIndex).getText().trim() !== '';
      } catch (error) {
        if (isWasmTrap(error)) throw error;
        return false;
      }
    });
  }

  /** Frees the document's WebAssembly memory; the object is unusable afterwards. */
  close(): void {
    this.document.destroy();
  }
}

const ENCRYPTED_NO_PASSWORD = 'encrypted PDF: a password is required (give it with --password-env NAME or --password P)';
const ENCRYPTED_WRONG_PASSWORD = 'encrypted PDF: the password is incorrect (check --password-env NAME or --password P)';

/** PDFium's message for a file it cannot parse (FPDF_ERR_FORMAT). */
const CORRUPT = 'File not in PDF format or corrupted';

/**
 * Whether PDFium can load the page: getPage does not check FPDF_LoadPage, an unloadable page has size 0.
 * Only for rebuilt documents. The wrapper has no way to close a page but render, so each loaded page
 * stays allocated (its content is parsed only when rendered) until the document is destroyed.
 */
function pageLoads(document: PDFiumDocument, pageIndex: number): boolean {
  const { originalWidth, originalHeight } = document.getPage(pageIndex).getOriginalSize();
  return originalWidth > 0 && originalHeight > 0;
}

/**
 * The wrapper reports FPDF_GetLastError only as fixed messages (@hyzyla/pdfium 2.1.13, pinned);
 * the tests pin the mapping of the ones a user can act on.
 */
function openError(error: unknown, password: string | undefined): DocumentError {
  const message = messageOf(error);
  switch (message) {
    case 'Password required or incorrect password':
      // The reason reaches the user of `run`, `enqueue`, `watch` and `ocr`, who all take these options.
      return new DocumentError(password ? ENCRYPTED_WRONG_PASSWORD : ENCRYPTED_NO_PASSWORD);
    case 'Unsupported security scheme':
      return new DocumentError('encrypted PDF: its security handler is not supported by PDFium');
    case CORRUPT:
      return new DocumentError('corrupt PDF: PDFium reports the file is not in PDF format or corrupted');
    default:
      return new DocumentError(`PDFium could not open the PDF: ${message}`, { cause: error });
  }
}

/** PDFium renders BGRA with byte order reversed, so RGBA; the background is opaque white. */
function rgbaToRgb(rgba: Uint8Array): Uint8Array {
  const rgb = new Uint8Array((rgba.length / 4) * 3);
  for (let i = 0, o = 0; i < rgba.length; i += 4, o += 3) {
    rgb[o] = rgba[i];
    rgb[o + 1] = rgba[i + 1];
    rgb[o + 2] = rgba[i + 2];
  }
  return rgb;
}

/**
 * A trap (or emscripten abort) inside PDFium leaves its WebAssembly state suspect: it propagates as
 * it is, so the worker reports it as fatal and is replaced, rather than as the document's fault.
 */
function isWasmTrap(error: unknown): boolean {
  return error instanceof WebAssembly.RuntimeError;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
