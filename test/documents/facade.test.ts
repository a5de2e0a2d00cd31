// The documents façade: one entry for every type, failures typed per document.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import { DocumentError, openDocument, PdfRenderer, renderPage } from '../../src/documents/document.js';
import {
  A4,
  LETTER,
  makeCorruptPdf,
  makeEncryptedPdf,
  makePdf,
  makeText,
  makeTwoPageTiff,
} from '../support/make-documents.js';

test('openDocument reports a PDF and its page count', async () => {
  assert.deepEqual(await openDocument(await makePdf([LETTER, A4])), { type: 'pdf', pageCount: 2 });
});

test('openDocument reports a TIFF and its page count', async () => {
  assert.deepEqual(await openDocument(await makeTwoPageTiff()), { type: 'tiff', pageCount: 2 });
});

test('openDocument opens an encrypted PDF with its password', async () => {
  const opened = await openDocument(makeEncryptedPdf('s3cret'), { password: 's3cret' });
  assert.deepEqual(opened, { type: 'pdf', pageCount: 1 });
});

test('renderPage renders a PDF page at the given dpi', async () => {
  const image = await renderPage(await makePdf([LETTER, A4]), 'pdf', 1, { dpi: 72 });
  assert.deepEqual([image.width, image.height], [595, 842]);
});

test('renderPage decodes an image page', async () => {
  const image = await renderPage(await makeTwoPageTiff(), 'tiff', 1);
  assert.deepEqual([image.width, image.height], [40, 30]);
});

test('renderPage uses the PdfRenderer it is given', async () => {
  const renderer = new PdfRenderer();
  after(() => renderer.close());
  const pdf = await makePdf([LETTER]);
  const image = await renderPage(pdf, 'pdf', 0, { longestSide: 1288, pdfRenderer: renderer });
  assert.equal(image.height, 1288);
});

test('openDocument rejects text with a DocumentError whose reason names it', async () => {
  await assert.rejects(openDocument(makeText()), (error: unknown) => {
    assert.ok(error instanceof DocumentError);
    assert.match(error.reason, /^text\/plain content is not a supported document/);
    return true;
  });
});

test('a failed document does not stop the others: each settles with its own outcome', async () => {
  const documents = [makeCorruptPdf(), await makePdf([LETTER]), makeText(), await makeTwoPageTiff()];
  const outcomes = await Promise.allSettled(documents.map((bytes) => openDocument(bytes)));
  const summary = outcomes.map((outcome) =>
    outcome.status === 'fulfilled'
      ? outcome.value.pageCount
      : `failed: ${(outcome.reason as DocumentError).reason}`,
  );
  assert.deepEqual(summary, [
    'failed: corrupt PDF: PDFium reports the file is not in PDF format or corrupted',
    1,
    'failed: text/plain content is not a supported document (PDF, PNG, JPEG, WebP, GIF, BMP, TIFF)',
    2,
  ]);
});
