// PDF page counting, rendering and finding the pages with text in PdfRenderer's worker threads.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';

import { PDFDocument, setTextRenderingMode, StandardFonts, TextRenderingMode } from 'pdf-lib';

import { DocumentError } from '../../src/documents/document-error.js';
import { MAX_RENDER_PIXELS, pdfPagePixels } from '../../src/documents/pdf-render-size.js';
import { PdfRenderer } from '../../src/documents/pdf-renderer.js';
import type { RgbImage } from '../../src/documents/document.js';
import {
  A4,
  BLACK_RECT_PT,
  FORM_FIELD_PT,
  LETTER,
  LETTER_LANDSCAPE,
  makeCorruptPdf,
  makeEncryptedPdf,
  makePdf,
  makePdfWithFormField,
  makeTruncatedPdf,
} from '../support/make-documents.js';

const renderer = new PdfRenderer();
after(() => renderer.close());

/** RGB at the pixel covering point (xPt, yPt) from the top-left, rendered at `dpi`. */
function colourAtPoint(image: RgbImage, xPt: number, yPt: number, dpi: number): number[] {
  const x = Math.round((xPt * dpi) / 72);
  const y = Math.round((yPt * dpi) / 72);
  const offset = (y * image.width + x) * 3;
  return [...image.data.subarray(offset, offset + 3)];
}

const WHITE = [255, 255, 255];
const BLACK = [0, 0, 0];
const rectCentre = {
  x: BLACK_RECT_PT.left + BLACK_RECT_PT.width / 2,
  y: BLACK_RECT_PT.top + BLACK_RECT_PT.height / 2,
};

test('counts the pages of a three-page PDF', async () => {
  assert.equal((await renderer.open(await makePdf([LETTER, A4, LETTER_LANDSCAPE]))).pageCount, 3);
});

test('renders a US Letter page at the default 144 DPI as 1224×1584 RGB', async () => {
  const image = await renderer.render(await makePdf([LETTER]), 0);
  assert.deepEqual([image.width, image.height, image.data.length], [1224, 1584, 1224 * 1584 * 3]);
});

test('renders a US Letter page at 72 DPI as 612×792', async () => {
  const image = await renderer.render(await makePdf([LETTER]), 0, { dpi: 72 });
  assert.deepEqual([image.width, image.height], [612, 792]);
});

test('renders an A4 page with longestSide 1288 as 911×1288', async () => {
  const image = await renderer.render(await makePdf([A4]), 0, { longestSide: 1288 });
  assert.deepEqual([image.width, image.height], [911, 1288]);
});

test('longestSide applies to the width of a landscape page', async () => {
  const image = await renderer.render(await makePdf([LETTER, LETTER_LANDSCAPE]), 1, { longestSide: 1288 });
  assert.deepEqual([image.width, image.height], [1288, 995]);
});

test('drawn content is rendered: black inside the rectangle, white margin around it', async () => {
  const image = await renderer.render(await makePdf([LETTER]), 0);
  assert.deepEqual(colourAtPoint(image, rectCentre.x, rectCentre.y, 144), BLACK);
  assert.deepEqual(colourAtPoint(image, 36, 36, 144), WHITE);
});

test('text is rendered: dark pixels in the first line (baseline 180 pt from the top)', async () => {
  const image = await renderer.render(await makePdf([LETTER]), 0);
  const rowBytes = image.width * 3;
  const band = image.data.subarray(170 * 2 * rowBytes, 182 * 2 * rowBytes);
  assert.ok(band.some((value) => value < 100), 'no dark pixel where the first line of text is');
});

test('a form field value without an appearance stream is drawn, as a viewer shows it', async () => {
  const image = await renderer.render(await makePdfWithFormField('WWWWWWWWWW'), 0, { dpi: 72 });
  const { left, top, width, height } = FORM_FIELD_PT;
  const rows = Array.from({ length: height }, (_, row) => {
    const start = ((top + row) * image.width + left) * 3;
    return image.data.subarray(start, start + width * 3);
  });
  assert.ok(rows.some((row) => row.some((value) => value < 100)), 'the field area is blank');
});

test('giving both dpi and longestSide is a RangeError', async () => {
  const pdf = await makePdf([LETTER]);
  await assert.rejects(renderer.render(pdf, 0, { dpi: 144, longestSide: 1288 }), RangeError);
});

test('an encrypted PDF without a password fails: a password is required, naming --password-env and --password', async () => {
  await assert.rejects(renderer.open(makeEncryptedPdf('s3cret')), {
    name: 'DocumentError',
    reason: 'encrypted PDF: a password is required (give it with --password-env NAME or --password P)',
  });
});

test('an encrypted PDF with a wrong password fails: the password is incorrect, naming --password-env and --password', async () => {
  await assert.rejects(renderer.render(makeEncryptedPdf('s3cret'), 0, { password: 'guess' }), {
    reason: 'encrypted PDF: the password is incorrect (check --password-env NAME or --password P)',
  });
});

test('an encrypted PDF renders its content with the password', async () => {
  const image = await renderer.render(makeEncryptedPdf('s3cret'), 0, { password: 's3cret' });
  assert.deepEqual(colourAtPoint(image, rectCentre.x, rectCentre.y, 144), BLACK);
});

test('a corrupt PDF fails with PDFium\'s reason and the renderer renders the next document', async () => {
  await assert.rejects(renderer.open(makeCorruptPdf()), {
    name: 'DocumentError',
    reason: 'corrupt PDF: PDFium reports the file is not in PDF format or corrupted',
  });
  const image = await renderer.render(await makePdf([LETTER]), 0, { dpi: 72 });
  assert.equal(image.width, 612);
});

test('a truncated PDF is rebuilt: it opens saying what is wrong, and the pages left render', async () => {
  const truncated = await makeTruncatedPdf(0.6);
  assert.deepEqual(await renderer.open(truncated), {
    pageCount: 4,
    damage: 'damaged PDF: it is truncated or its cross-reference table is broken; rebuilt from its objects, 2 of 4 pages can be read',
  });
  for (const pageIndex of [0, 1]) {
    const image = await renderer.render(truncated, pageIndex, { dpi: 72 });
    assert.deepEqual(colourAtPoint(image, 72 + 144 / 2, 792 - 600 - 72 / 2, 72), BLACK, `page index ${pageIndex}`);
  }
  await assert.rejects(renderer.render(truncated, 2, { dpi: 72 }), {
    name: 'DocumentError',
    reason: /^page index 2 could not be loaded by PDFium \(damaged PDF: .* 2 of 4 pages can be read\)$/,
  });
});

test('a truncated PDF of which no page can be read is rejected as damaged', async () => {
  await assert.rejects(renderer.open(await makeTruncatedPdf(0.3)), {
    name: 'DocumentError',
    reason: 'damaged PDF: it is truncated or its cross-reference table is broken, and none of its 4 pages can be read',
  });
});

test('pagesWithText: pages with text of their own, visible or invisible, and pages without', async () => {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage(LETTER).drawText('Printed text', { x: 72, y: 700, size: 12, font });
  pdf.addPage(LETTER).drawRectangle({ x: 72, y: 600, width: 144, height: 72 });
  const invisible = pdf.addPage(LETTER);
  invisible.pushOperators(setTextRenderingMode(TextRenderingMode.Invisible));
  invisible.drawText('An earlier OCR layer', { x: 72, y: 700, size: 12, font });
  pdf.addPage(LETTER).drawText('   ', { x: 72, y: 700, size: 12, font });
  const bytes = await pdf.save();
  assert.deepEqual(await renderer.pagesWithText(bytes), [true, false, true, false]);
  // The document it read is closed: rendering it next opens it again rather than using the closed one.
  assert.equal((await renderer.render(bytes, 1, { dpi: 72 })).width, 612);
});

test('pagesWithText of a rebuilt PDF: the pages PDFium cannot load have none', async () => {
  assert.deepEqual(await renderer.pagesWithText(await makeTruncatedPdf(0.6)), [true, true, false, false]);
  await assert.rejects(renderer.pagesWithText(makeEncryptedPdf('s3cret')), { name: 'DocumentError', reason: /a password is required/ });
  assert.deepEqual(await renderer.pagesWithText(makeEncryptedPdf('s3cret'), { password: 's3cret' }), [false]);
});

test('a page index past the end fails with the page count in the reason', async () => {
  await assert.rejects(renderer.render(await makePdf([LETTER, A4]), 2), {
    reason: 'page index 2 is out of range: the document has 2 pages',
  });
});

test('a PDF given as a file path is read by the worker', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-pdf-'));
  try {
    const file = path.join(dir, 'three pages.pdf');
    await writeFile(file, await makePdf([LETTER, A4, LETTER]));
    assert.equal((await renderer.open(file)).pageCount, 3);
    assert.equal((await renderer.render(file, 1, { dpi: 72 })).height, 842);
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('a missing file fails with a DocumentError naming it', async () => {
  await assert.rejects(renderer.open('/nonexistent/scan.pdf'), (error: unknown) => {
    assert.ok(error instanceof DocumentError);
    assert.match(error.reason, /^cannot read \/nonexistent\/scan\.pdf: ENOENT/);
    return true;
  });
});

test('the caller\'s bytes stay intact after rendering (the worker gets a copy)', async () => {
  const pdf = await makePdf([LETTER]);
  const before = Buffer.from(pdf);
  await renderer.render(pdf, 0, { dpi: 36 });
  assert.ok(pdf.equals(before));
});

test('a pool of two workers renders pages of two documents concurrently', async () => {
  const pool = new PdfRenderer({ size: 2 });
  try {
    const [letter, a4] = await Promise.all([makePdf([LETTER, LETTER]), makePdf([A4, A4])]);
    const requests = [0, 1].flatMap((page) => [letter, a4].map((pdf) => pool.render(pdf, page, { dpi: 72 })));
    const images = await Promise.all(requests);
    assert.deepEqual(images.map((image) => image.height), [792, 842, 792, 842]);
  } finally {
    await pool.close();
  }
});

test('a request running past timeoutMs fails with a DocumentError saying so', async () => {
  const impatient = new PdfRenderer({ timeoutMs: 1 });
  try {
    await assert.rejects(impatient.open(await makePdf([LETTER])), {
      name: 'DocumentError',
      reason: 'counting PDF pages: the renderer timed out after 1 ms',
    });
  } finally {
    await impatient.close();
  }
});

test('a page over MAX_RENDER_PIXELS at the asked dpi is scaled down to fit, keeping its shape', () => {
  const { width, height } = pdfPagePixels(612, 792, { dpi: 1200 });
  const pixels = width * height;
  assert.ok(pixels <= MAX_RENDER_PIXELS && pixels > 0.999 * MAX_RENDER_PIXELS, `${width}×${height}`);
  assert.ok(Math.abs(width / height - 612 / 792) < 0.001);
});

test('a closed renderer rejects new requests', async () => {
  const closed = new PdfRenderer();
  await closed.close();
  await assert.rejects(closed.open(await makePdf([LETTER])), /PdfRenderer is closed/);
});

test('an idle renderer does not keep the process alive', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-pdf-'));
  try {
    const rendererModule = new URL('../../src/documents/pdf-renderer.js', import.meta.url).href;
    const script = path.join(dir, 'count-and-exit.mjs');
    const pdf = path.join(dir, 'one-page.pdf');
    await writeFile(pdf, await makePdf([LETTER]));
    await writeFile(
      script,
      `import { PdfRenderer } from ${JSON.stringify(rendererModule)};\n` +
        `console.log((await new PdfRenderer().open(${JSON.stringify(pdf)})).pageCount);\n`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 30_000 });
    assert.equal(stdout.trim(), '1');
  } finally {
    await rm(dir, { recursive: true });
  }
});
