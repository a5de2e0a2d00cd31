// Worker thread of PdfRenderer: owns one PDFium instance and keeps the last opened document, so
// rendering the pages of one document one after another parses it once.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';

import { DocumentError } from './document-error.js';
import { PdfDocument } from './pdf-document.js';
import type { PdfReply, PdfRequest, PdfSource } from './pdf-render-protocol.js';

if (!parentPort) throw new Error('pdf-render-worker.js runs as a worker thread of PdfRenderer');
const port = parentPort;

let cached: { key: string; document: PdfDocument } | undefined;

port.on('message', (request: PdfRequest) => {
  void answer(request);
});

async function answer(request: PdfRequest): Promise<void> {
  try {
    const document = await openCached(request.source, request.password);
    if (request.kind === 'count') {
      reply({ id: request.id, ok: true, pageCount: document.pageCount, damage: document.damage });
      return;
    }
    if (request.kind === 'text') {
      const pagesWithText = document.pagesWithText();
      // Reading the text left every page loaded: free them now rather than when the next document opens.
      forgetCached();
      reply({ id: request.id, ok: true, pageCount: document.pageCount, pagesWithText });
      return;
    }
    const image = await document.renderPage(request.pageIndex, request.size);
    const transfer = [image.data.buffer as ArrayBuffer];
    reply({ id: request.id, ok: true, pageCount: document.pageCount, image }, transfer);
  } catch (error) {
    const isDocumentError = error instanceof DocumentError;
    const reason = isDocumentError ? error.reason : `PDF renderer failed: ${String(error)}`;
    reply({ id: request.id, ok: false, reason, fatal: !isDocumentError });
  }
}

function reply(message: PdfReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/** Files are keyed by path, size and modification time; bytes by their SHA-256. */
async function openCached(source: PdfSource, password: string | undefined): Promise<PdfDocument> {
  const key = `${await sourceKey(source)}\0${password ?? ''}`;
  if (cached?.key === key) return cached.document;
  forgetCached();
  const bytes = 'bytes' in source ? source.bytes : await readFile(source.path).catch(cannotRead(source.path));
  const document = await PdfDocument.open(bytes, password);
  cached = { key, document };
  return document;
}

function forgetCached(): void {
  cached?.document.close();
  cached = undefined;
}

async function sourceKey(source: PdfSource): Promise<string> {
  if ('bytes' in source) return `sha256:${createHash('sha256').update(source.bytes).digest('hex')}`;
  const info = await stat(source.path).catch(cannotRead(source.path));
  return `file:${path.resolve(source.path)}:${info.size}:${info.mtimeMs}`;
}

function cannotRead(file: string): (error: Error) => never {
  return (error) => {
    throw new DocumentError(`cannot read ${file}: ${error.message}`);
  };
}
