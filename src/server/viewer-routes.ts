// The page viewer's routes under /viewer, shared by `serve` (behind API keys and sessions) and
// `scriptorium view` (on localhost): the documents list, a page's side-by-side view, the page image
// rendered from the staged source (kept in a bounded cache), and the retry of one failed page. Every
// answer carries a strict Content-Security-Policy: scripts, styles and images from this server only.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

import { InvalidBoundaryDataError } from '../jobs/boundary-data.js';
import { parseDocumentResultJson, parsePageResultJson, type DocumentResultJson, type PageResultJson } from '../jobs/result-json.js';
import { documentKeys, documentResultKeys, pageResultKey, RESULTS_FOLDER } from '../jobs/storage-layout.js';
import { pageImageJpeg } from '../output/page-image.js';
import { pagesNeedingReview, pageViewHtml, VIEWER_ASSETS_DIR } from '../output/page-view.js';
import { retryFailedPages } from '../producer/retry-failed-pages.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { checkedDocId } from './document-status.js';
import { HttpError } from './http-error.js';
import type { PageImageCache } from './page-image-cache.js';
import { checkSameOrigin } from './viewer-sessions.js';
import { documentsPage, messagePage, pageImageUrl, pageShellPage, pageUrl, STATIC_PATH, VIEWER_PATH, type DocumentEntry } from './viewer-pages.js';

/** Nothing inline, nothing from elsewhere: the viewer's pages run only its own static script. */
export const VIEWER_POLICY = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Pixels on the longer side of the page images the viewer shows. */
export const VIEWER_IMAGE_LONGEST_SIDE = 1600;

export interface ViewerSettings {
  storage: Storage;
  /** How the retry button queues a page: a Redis to queue it on, or why there is none. */
  retry: { connection: RedisOptions; attempts?: number } | { unavailable: string };
  images: PageImageCache;
  logger: Logger;
}

/** The security headers of every answer under /viewer, and the static files (the login form needs them, so they need no session). */
export function viewerPublicRoutes(): express.Router {
  const router = express.Router();
  router.use(VIEWER_PATH, (_request: Request, response: Response, next: NextFunction) => {
    response.set({ 'content-security-policy': VIEWER_POLICY, 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin' });
    next();
  });
  router.use(STATIC_PATH, express.static(VIEWER_ASSETS_DIR, { index: false, fallthrough: false }));
  return router;
}

export function viewerRoutes(settings: ViewerSettings): express.Router {
  const { storage } = settings;
  // Strict, so that /viewer (redirected) and /viewer/ (the list) are two routes.
  const router = express.Router({ strict: true });

  router.get(VIEWER_PATH, (_request, response) => response.redirect(303, `${VIEWER_PATH}/`));

  router.get(`${VIEWER_PATH}/`, async (_request, response) => {
    response.type('html').send(documentsPage(await listDocuments(storage)));
  });

  router.get(`${VIEWER_PATH}/documents/:docId`, (request, response) => {
    response.redirect(303, pageUrl(checkedDocId(request.params.docId as string), 1));
  });

  router.get(`${VIEWER_PATH}/documents/:docId/pages/:page`, async (request, response) => {
    const { docId, page, document } = await assembledPage(request, storage);
    const failure = document.failedPages.find((failed) => failed.page === page)?.reason;
    const result = failure === undefined ? await readPageResult(storage, docId, page) : undefined;
    const review = pagesNeedingReview(document);
    const nextFlagged = review.find((flagged) => flagged > page) ?? review.find((flagged) => flagged !== page);
    const retry =
      failure === undefined
        ? undefined
        : 'unavailable' in settings.retry
          ? { enabled: false as const, reason: settings.retry.unavailable }
          : (await storage.exists(documentResultKeys(docId).failedPages))
            ? { enabled: true as const }
            : { enabled: false as const, reason: 'the document is being assembled again' };
    const pageView = pageViewHtml({ page, result, failure, imageSrc: pageImageUrl(docId, page) });
    response.type('html').send(
      pageShellPage({ docId, uri: document.source.uri, page, pageCount: document.source.pages, nextFlagged, retry, retried: request.query.retried === '1', pageView }),
    );
  });

  router.get(`${VIEWER_PATH}/documents/:docId/pages/:page/image.jpg`, async (request, response) => {
    const { docId, page, document } = await assembledPage(request, storage);
    const image = await settings.images.get(`${docId}/${page}`, async () => {
      const source = await storage.get(documentKeys(docId, document.source.type).source).catch((error: unknown) => {
        if (error instanceof StorageError && error.code === 'not_found') throw new HttpError(404, `the staged source of ${docId} is no longer in the storage`);
        throw error;
      });
      return pageImageJpeg(source, document.source.type, page, VIEWER_IMAGE_LONGEST_SIDE);
    });
    response.type('jpeg').set('cache-control', 'private, max-age=3600').send(image);
  });

  router.post(`${VIEWER_PATH}/documents/:docId/pages/:page/retry`, async (request, response) => {
    checkSameOrigin(request);
    const { docId, page } = await assembledPage(request, storage);
    if ('unavailable' in settings.retry) throw new HttpError(503, `retry is not available: ${settings.retry.unavailable}`);
    const outcome = await retryFailedPages(docId, { storage, connection: settings.retry.connection, attempts: settings.retry.attempts, pages: [page] });
    settings.logger.info({ docId, page, outcome: outcome.status, key: response.locals.apiKey?.name }, 'viewer retry of a failed page');
    if (outcome.status === 'requeued') {
      response.redirect(303, `${pageUrl(docId, page)}?retried=1`);
    } else {
      response.status(409).type('html').send(messagePage('Not queued again', `Page ${page} was not queued again: ${outcome.reason}`, pageUrl(docId, page)));
    }
  });

  return router;
}

/** Every document with a results folder, in docId order: one listing of results/, then each assembled one's document.json. */
async function listDocuments(storage: Storage): Promise<DocumentEntry[]> {
  const found = new Map<string, { assembled: boolean; pagesStored: number }>();
  for await (const object of storage.list(RESULTS_FOLDER, { recursive: true })) {
    const match = /^results\/([0-9a-f]{32})\/(document\.json|pages\/\d+\.json)$/.exec(object.key);
    if (match === null) continue;
    const entry = found.get(match[1]) ?? { assembled: false, pagesStored: 0 };
    if (match[2] === 'document.json') entry.assembled = true;
    else entry.pagesStored++;
    found.set(match[1], entry);
  }
  const entries: DocumentEntry[] = [];
  for (const [docId, { assembled, pagesStored }] of found) {
    if (!assembled) {
      entries.push({ docId, state: 'being read', pages: pagesStored });
      continue;
    }
    try {
      const document = await readDocument(storage, docId);
      entries.push({
        docId,
        uri: document.source.uri,
        state: document.failedPages.length === 0 ? 'done' : 'failed pages',
        pages: document.source.pages,
        failedPages: document.failedPages.length,
        flagged: document.flagged === undefined ? undefined : pagesNeedingReview(document).length,
        confidence: document.confidence?.mean,
      });
    } catch (error) {
      if (!(error instanceof InvalidBoundaryDataError)) throw error;
      entries.push({ docId, state: 'unreadable', pages: pagesStored, problem: error.message });
    }
  }
  return entries;
}

/** The docId and page of the request, of an assembled document that has that page. */
async function assembledPage(request: Request, storage: Storage): Promise<{ docId: string; page: number; document: DocumentResultJson }> {
  const docId = checkedDocId(request.params.docId as string);
  const page = Number(request.params.page);
  if (!(Number.isInteger(page) && page >= 1)) throw new HttpError(400, `page must be a page number from 1 (got "${request.params.page as string}")`);
  let document: DocumentResultJson;
  try {
    document = await readDocument(storage, docId);
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') throw new HttpError(404, `document ${docId} has not been assembled (unknown, or still being read)`);
    throw damagedAs422(error);
  }
  if (page > document.source.pages) throw new HttpError(404, `document ${docId} has ${document.source.pages} pages, not ${page}`);
  return { docId, page, document };
}

async function readDocument(storage: Storage, docId: string): Promise<DocumentResultJson> {
  const key = documentResultKeys(docId).json;
  return parseDocumentResultJson((await storage.get(key)).toString('utf8'), key);
}

async function readPageResult(storage: Storage, docId: string, page: number): Promise<PageResultJson> {
  const key = pageResultKey(docId, page, 'json');
  try {
    return parsePageResultJson((await storage.get(key)).toString('utf8'), key);
  } catch (error) {
    throw damagedAs422(error);
  }
}

/** A stored result that is no such result is the storage's problem, said as it is, not an internal error. */
function damagedAs422(error: unknown): unknown {
  return error instanceof InvalidBoundaryDataError ? new HttpError(422, error.message) : error;
}
