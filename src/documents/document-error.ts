// Errors a caller records against one document ("document failed: <reason>") before moving on to
// the next. Anything else thrown from this folder is a bug or a lifecycle misuse, not bad input.

/** A document that cannot be opened or a page of it that cannot be rendered; `reason` says why. */
export class DocumentError extends Error {
  readonly reason: string;

  constructor(reason: string, options?: ErrorOptions) {
    super(reason, options);
    this.name = 'DocumentError';
    this.reason = reason;
  }
}

/** Content that is none of the supported formats (PDF, PNG, JPEG, WebP, GIF, BMP, TIFF). */
export class UnsupportedDocumentError extends DocumentError {
  constructor(reason: string) {
    super(reason);
    this.name = 'UnsupportedDocumentError';
  }
}

/** The DocumentError for a page index outside the document. */
export function pageOutOfRange(pageIndex: number, pageCount: number): DocumentError {
  const pages = pageCount === 1 ? '1 page' : `${pageCount} pages`;
  return new DocumentError(`page index ${pageIndex} is out of range: the document has ${pages}`);
}
