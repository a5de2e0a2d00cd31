// The /v1/documents routes: submit, status, results, page files and cancellation.
import type { Queue } from 'bullmq';
import express, { type Request, type Response } from 'express';

import { cancelledMarkerKey, documentResultKeys, pageResultKey } from '../jobs/storage-layout.js';
import { documentJobId, pagesOfJobId } from '../queue/job-ids.js';
import { pageJobIdOfKey } from '../queue/queue-names.js';
import { type Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { documentHtml } from '../output/document-html.js';
import { searchablePdf, SearchablePdfError, TEXT_LAYERS, type TextLayer } from '../output/searchable-pdf.js';
import { PAGE_FORMATS, RESULT_FORMATS, type DocumentStatus, type ResultFormat } from './api-types.js';
import type { DocumentEvents } from './document-events.js';
import { checkedDocId, documentStatus, isSettled, settledDocument, type DocumentStatusSources } from './document-status.js';
import { HttpError } from './http-error.js';
import { submitDocument, type SubmitSettings } from './submit-document.js';

export interface DocumentRoutesSettings {
  submit: SubmitSettings;
  status: DocumentStatusSources;
  events: DocumentEvents;
}

/** A comment line on an idle event stream, so that proxies keep it open. */
const HEARTBEAT_MS = 15_000;

const CONTENT_TYPES: Record<ResultFormat, string> = {
  md: 'text/markdown; charset=utf-8',
  json: 'application/json',
  html: 'text/html; charset=utf-8',
  pdf: 'application/pdf',
};
/** The HTML export runs nothing and loads nothing but its own images, whatever a document's text says. */
const HTML_POLICY = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";

export function documentRoutes(settings: DocumentRoutesSettings): express.Router {
  const { storage } = settings.status;
  const router = express.Router();

  router.post('/v1/documents', async (request, response) => {
    response.status(202).json(await submitDocument(request, settings.submit, response.locals.apiKey));
  });

  router.get('/v1/documents/:docId', async (request, response) => {
    response.json(await knownStatus(request, settings.status));
  });

  router.get('/v1/documents/:docId/events', async (request, response) => {
    await streamStatus(request, response, settings);
  });

  router.get('/v1/documents/:docId/result', async (request, response) => {
    const docId = checkedDocId(request.params.docId as string);
    const format = queryChoice(request, 'format', RESULT_FORMATS, 'md');
    const textLayer = queryChoice(request, 'textLayer', TEXT_LAYERS, 'keep');
    if (request.query.textLayer !== undefined && format !== 'pdf') throw new HttpError(400, `textLayer applies to format=pdf only (got format=${format})`);
    if ((await settledDocument(docId, storage)) === undefined) await refuseUnsettled(request, settings.status);
    const keys = documentResultKeys(docId);
    if (format === 'html') {
      response.set('content-security-policy', HTML_POLICY).type(CONTENT_TYPES.html).send(await documentHtml(docId, storage));
    } else if (format === 'pdf') {
      response.type(CONTENT_TYPES.pdf).send(Buffer.from(await searchablePdfOrRefuse(docId, storage, textLayer)));
    } else {
      await sendObject(response, storage, format === 'md' ? keys.markdown : keys.json, CONTENT_TYPES[format]);
    }
  });

  router.get('/v1/documents/:docId/pages/:page', async (request, response) => {
    const docId = checkedDocId(request.params.docId as string);
    const page = Number(request.params.page);
    if (!(Number.isInteger(page) && page >= 1)) throw new HttpError(400, `page must be a page number from 1 (got "${request.params.page as string}")`);
    const format = queryChoice(request, 'format', PAGE_FORMATS, 'md');
    const key = pageResultKey(docId, page, format);
    if (!(await storage.exists(key))) {
      await knownStatus(request, settings.status);
      throw new HttpError(404, `page ${page} of ${docId} has no result (yet): see GET /v1/documents/${docId}`);
    }
    await sendObject(response, storage, key, CONTENT_TYPES[format]);
  });

  router.delete('/v1/documents/:docId', async (request, response) => {
    const docId = checkedDocId(request.params.docId as string);
    const job = await settings.status.documents.getJob(documentJobId(docId));
    const state = await job?.getState();
    if (job === undefined || state === 'completed' || state === 'failed' || state === 'unknown') {
      await knownStatus(request, settings.status);
      throw new HttpError(409, `document ${docId} has settled already: there is nothing to cancel`);
    }
    const unreadPages = await cancelQueuedPages(docId, settings.status.documents, storage);
    await settings.submit.admission.cancelled(docId, unreadPages);
    response.status(202).json(await knownStatus(request, settings.status));
  });

  return router;
}

/**
 * Server-sent events: the status at once and after every page of the document settles ('status'),
 * then the final one ('settled'), after which the stream ends.
 */
async function streamStatus(request: Request, response: Response, settings: DocumentRoutesSettings): Promise<void> {
  const docId = checkedDocId(request.params.docId as string);
  let changed = false;
  let open = true;
  let wake: () => void = () => undefined;
  // Listening before the first status is read, so that no settlement falls between the two.
  const unlisten = settings.events.listen((id) => {
    if (id !== docId) return;
    changed = true;
    wake();
  });
  let status: DocumentStatus;
  try {
    status = await knownStatus(request, settings.status);
  } catch (error) {
    unlisten();
    throw error;
  }
  response.on('close', () => {
    open = false;
    wake();
  });
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), HEARTBEAT_MS);
  try {
    let sent = '';
    for (;;) {
      const settled = isSettled(status);
      const data = JSON.stringify(status);
      if (data !== sent || settled) response.write(`event: ${settled ? 'settled' : 'status'}\ndata: ${data}\n\n`);
      sent = data;
      if (settled) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (changed || !open) resolve();
      });
      if (!open) break;
      changed = false;
      status = (await documentStatus(docId, settings.status)) ?? status;
    }
  } finally {
    clearInterval(heartbeat);
    unlisten();
    response.end();
  }
}

/**
 * Records the cancellation (the assembler gives the pages that never ran that reason), then removes
 * the document's page jobs that no worker holds; pages being read finish and are kept. Answers the
 * pages the removed jobs covered.
 */
async function cancelQueuedPages(docId: string, documents: Queue, storage: Storage): Promise<number> {
  await storage.put(cancelledMarkerKey(docId), Buffer.from(`${JSON.stringify({ docId, cancelledAt: new Date().toISOString() })}\n`), {
    contentType: 'application/json',
  });
  const job = await documents.getJob(documentJobId(docId));
  if (job === undefined) return 0;
  const unprocessed = async () => (await job.getDependencies()).unprocessed ?? [];
  const before = await unprocessed();
  await job.removeUnprocessedChildren();
  const left = new Set(await unprocessed());
  let pages = 0;
  for (const key of before) {
    const id = left.has(key) ? undefined : pageJobIdOfKey(key);
    const range = id === undefined ? undefined : pagesOfJobId(id);
    if (range !== undefined) pages += range.lastPage - range.firstPage + 1;
  }
  return pages;
}

async function knownStatus(request: Request, sources: DocumentStatusSources) {
  const docId = checkedDocId(request.params.docId as string);
  const status = await documentStatus(docId, sources);
  if (status === undefined) throw new HttpError(404, `no document ${docId} is known: it was never submitted, or its results were removed`);
  return status;
}

async function refuseUnsettled(request: Request, sources: DocumentStatusSources): Promise<never> {
  const status = await knownStatus(request, sources);
  throw new HttpError(409, `document ${status.docId} is ${status.state}: its result is written once every page has settled`);
}

/** The query parameter `name`, one of `choices`; `fallback` when it is absent. */
function queryChoice<C extends string>(request: Request, name: string, choices: readonly C[], fallback: C): C {
  const value = request.query[name] ?? fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw new HttpError(400, `${name} must be one of ${choices.join(', ')}`);
  }
  return value as C;
}

/** A PDF that pdf-lib cannot rewrite (encrypted, damaged), or whose own text cannot be looked for, is the document's problem: 422. */
async function searchablePdfOrRefuse(docId: string, storage: Storage, textLayer: TextLayer): Promise<Uint8Array> {
  try {
    return await searchablePdf(docId, storage, { textLayer });
  } catch (error) {
    if (error instanceof SearchablePdfError) throw new HttpError(422, error.message);
    throw error;
  }
}

async function sendObject(response: Response, storage: Storage, key: string, contentType: string): Promise<void> {
  let body: Buffer;
  try {
    body = await storage.get(key);
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') throw new HttpError(404, `${key} is missing from the storage`);
    throw error;
  }
  response.type(contentType).send(body);
}
