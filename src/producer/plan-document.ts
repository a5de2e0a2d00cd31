// From one input document to what the queueing layer enqueues: type and page count by content, the
// docId, the storage keys, the document job and its page jobs (V3 multi-page: page groups), and
// whether a previous run already finished it. stageSource then uploads the source once. A local file
// is hashed, counted and staged as a stream, so a huge document is never held in memory here; the
// per-document limits refuse what is too large before anything is staged or queued.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { DocumentError, openDocument, sealPdfPassword, type DocumentSource, type DocumentType, type OpenedDocument } from '../documents/document.js';
import { planPageGroups } from '../engine/v3-page-groups.js';
import type { DocumentJobData, OcrJobOptions, PageJobData } from '../jobs/job-types.js';
import { documentKeys, documentResultKeys, stagedJobKey, type DocumentKeys } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { describeCause, StorageError } from '../storage/storage-error.js';
import { documentId, documentIdOfFile } from './doc-id.js';
import type { InputDocument, UnreachableInputPolicy } from './input-document.js';

/** Output tokens reserved per page in a V3 parse-multi request when options.maxNewTokens is not set. */
const V3_MULTI_PAGE_DEFAULT_OUTPUT_BUDGET = 2048;
/** Text ids of the V3 multi-page prompt '<image>Multi page parsing.' besides BOS and the image ids. */
const V3_MULTI_PAGE_PROMPT_TOKENS = 4;

export interface PlannedDocument {
  status: 'planned';
  docId: string;
  keys: DocumentKeys;
  documentJob: DocumentJobData;
  /** One per page, in page order; for V3 parse-multi one per page group. */
  pageJobs: PageJobData[];
  /** results/<docId>/_DONE exists: a previous run finished this document; there is nothing to stage or enqueue. */
  alreadyDone: boolean;
  /** The source as read, or the local file holding it, for stageSource; drop the plan once it is staged. */
  source: DocumentSource;
  /** The source's size in bytes. */
  size: number;
}

/** What one document may be; unset: no limit. */
export interface DocumentLimits {
  /** Larger documents are rejected before they are read. */
  maxBytes?: number;
  /** Documents of more pages are rejected once counted, before anything is staged or queued. */
  maxPages?: number;
}

const MIB = 1024 * 1024;

/** An input that is no usable document (unreadable, unsupported type, damaged, encrypted): record it and go on. */
export interface RejectedDocument {
  status: 'rejected';
  uri: string;
  reason: string;
}

export interface PlanDocumentDeps {
  /** Where staging/ and results/ live. */
  storage: Storage;
  /** An input whose storage stays unreachable after retries. Default 'reject' (see UnreachableInputPolicy). */
  whenUnreachable?: UnreachableInputPolicy;
  /** Default: none. */
  limits?: DocumentLimits;
}

/**
 * `pdfPassword` opens encrypted PDFs (other documents ignore it); only the page jobs of a document
 * that needs it carry it, sealed to the document's bytes.
 */
export async function planDocument(
  input: InputDocument,
  options: OcrJobOptions,
  deps: PlanDocumentDeps,
  pdfPassword?: string,
): Promise<PlannedDocument | RejectedDocument> {
  const limits = deps.limits ?? {};
  if (limits.maxBytes !== undefined && input.size > limits.maxBytes) {
    return { status: 'rejected', uri: input.uri, reason: `too large: ${megabytes(input.size)}, over the limit of ${megabytes(limits.maxBytes)} per document (--max-document-mb)` };
  }
  let source: DocumentSource;
  let docId: string;
  try {
    if (input.path === undefined) {
      source = await input.bytes();
      docId = documentId(source, options);
    } else {
      source = input.path;
      docId = await documentIdOfFile(input.path, options);
    }
  } catch (error) {
    // Gone since it was listed, unreadable, too large for a Buffer: this document's problem. Unreachable: as the policy says.
    if (error instanceof StorageError && error.code === 'transient' && deps.whenUnreachable === 'throw') throw error;
    return { status: 'rejected', uri: input.uri, reason: `cannot read it: ${describeCause(error)}` };
  }
  let opened: OpenedDocument & { password?: string };
  try {
    opened = await openWithPassword(source, pdfPassword);
  } catch (error) {
    if (error instanceof DocumentError) return { status: 'rejected', uri: input.uri, reason: error.reason };
    throw error;
  }
  const { type, pageCount, damage } = opened;
  if (limits.maxPages !== undefined && pageCount > limits.maxPages) {
    return { status: 'rejected', uri: input.uri, reason: `too many pages: ${pageCount}, over the limit of ${limits.maxPages} per document (--max-document-pages)` };
  }
  const keys = documentKeys(docId, type);
  const enqueuedAt = Date.now();
  const storage = deps.storage.url;
  const documentJob: DocumentJobData = {
    docId,
    sourceUri: input.uri,
    storage,
    type,
    pageCount,
    keys,
    options,
    enqueuedAt,
    ...(damage === undefined ? {} : { damage }),
  };
  // Sealing hashes the whole PDF: an encrypted file is read once more for it.
  const sealed = await sealedPasswordOf(opened, source);
  const pageJobs = pageRanges(pageCount, options).map(([firstPage, lastPage]): PageJobData => ({
    docId,
    sourceUri: input.uri,
    storage,
    type,
    firstPage,
    lastPage,
    keys,
    options,
    ...sealed,
    enqueuedAt,
  }));
  const alreadyDone = await deps.storage.exists(documentResultKeys(docId).done);
  const size = typeof source === 'string' ? input.size : source.length;
  return { status: 'planned', docId, keys, documentJob, pageJobs, alreadyDone, source, size };
}

function megabytes(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MB`;
}

/** What a page job of an opened document carries of its password: nothing, unless it needed one (sealed to its bytes). */
/** What page jobs carry of an encrypted PDF's password: sealed with the document's bytes (a file is read for it). */
export async function sealedPasswordOf(opened: { password?: string }, source: DocumentSource): Promise<Pick<PageJobData, 'pdfPassword'>> {
  if (opened.password === undefined) return {};
  return { pdfPassword: sealPdfPassword(opened.password, typeof source === 'string' ? await readFile(source) : source) };
}

/**
 * Opens the document without the password first, so that `password` is set only on a document that
 * cannot be opened without it; with a wrong password, the DocumentError says so.
 */
export async function openWithPassword(source: DocumentSource, pdfPassword: string | undefined): Promise<OpenedDocument & { password?: string }> {
  try {
    return await openDocument(source);
  } catch (error) {
    if (!(error instanceof DocumentError) || pdfPassword === undefined) throw error;
    return { ...(await openDocument(source, { password: pdfPassword })), password: pdfPassword };
  }
}

/** [firstPage, lastPage] pairs, 1-based and inclusive: every page alone, or V3 parse-multi page groups. */
function pageRanges(pageCount: number, options: OcrJobOptions): Array<[number, number]> {
  if (options.variant !== 'v3' || options.task !== 'parse-multi') {
    return Array.from({ length: pageCount }, (_, index): [number, number] => [index + 1, index + 1]);
  }
  const outputBudgetPerPage = options.maxNewTokens ?? V3_MULTI_PAGE_DEFAULT_OUTPUT_BUDGET;
  try {
    const groups = planPageGroups(pageCount, { outputBudgetPerPage, promptTokens: V3_MULTI_PAGE_PROMPT_TOKENS });
    return groups.map(({ start, end }): [number, number] => [start + 1, end]);
  } catch (error) {
    throw new RangeError(`V3 parse-multi with maxNewTokens ${outputBudgetPerPage} (the output budget per page): ${describeCause(error)}`, {
      cause: error,
    });
  }
}

/**
 * Uploads the planned document's source to staging/<docId>/source.<ext>, unless an object of the same
 * size is already there (an earlier run staged it: same docId, same bytes), and its document job to
 * staging/<docId>/job.json unless that is there, from which `reconcile` queues it again should
 * Redis lose its jobs.
 */
export async function stageSource(planned: PlannedDocument, storage: Storage): Promise<'uploaded' | 'already-staged'> {
  const key = planned.keys.source;
  const jobKey = stagedJobKey(planned.docId);
  const staged = await storage.stat(key).then(
    (object) => object.size === planned.size,
    (error: unknown) => {
      if (error instanceof StorageError && error.code === 'not_found') return false;
      throw error;
    },
  );
  if (!staged) {
    const body = typeof planned.source === 'string' ? createReadStream(planned.source) : planned.source;
    await storage.put(key, body, { contentType: mimeType(planned.documentJob.type) });
  }
  if (!staged || !(await storage.exists(jobKey))) {
    await storage.put(jobKey, Buffer.from(`${JSON.stringify(planned.documentJob, null, 2)}\n`), { contentType: 'application/json' });
  }
  return staged ? 'already-staged' : 'uploaded';
}

function mimeType(type: DocumentType): string {
  return type === 'pdf' ? 'application/pdf' : `image/${type}`;
}
