// From one input document to what the queueing layer enqueues: type and page count by content, the
// docId, the storage keys, the document job and its page jobs (V3 multi-page: page groups), and
// whether a previous run already finished it. stageSource then uploads the source once.
import { DocumentError, openDocument, sealPdfPassword, type DocumentType, type OpenedDocument } from '../documents/document.js';
import { planPageGroups } from '../engine/v3-page-groups.js';
import type { DocumentJobData, OcrJobOptions, PageJobData } from '../jobs/job-types.js';
import { documentKeys, documentResultKeys, type DocumentKeys } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { describeCause, StorageError } from '../storage/storage-error.js';
import { documentId } from './doc-id.js';
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
  /** The source as read, for stageSource; drop the plan once it is staged. */
  bytes: Buffer;
}

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
  let bytes: Buffer;
  try {
    bytes = await input.bytes();
  } catch (error) {
    // Gone since it was listed, unreadable, too large for a Buffer: this document's problem. Unreachable: as the policy says.
    if (error instanceof StorageError && error.code === 'transient' && deps.whenUnreachable === 'throw') throw error;
    return { status: 'rejected', uri: input.uri, reason: `cannot read it: ${describeCause(error)}` };
  }
  let opened: OpenedDocument & { password?: string };
  try {
    opened = await openWithPassword(bytes, pdfPassword);
  } catch (error) {
    if (error instanceof DocumentError) return { status: 'rejected', uri: input.uri, reason: error.reason };
    throw error;
  }
  const { type, pageCount, damage } = opened;
  const docId = documentId(bytes, options);
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
  const sealed = sealedPasswordOf(opened, bytes);
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
  return { status: 'planned', docId, keys, documentJob, pageJobs, alreadyDone, bytes };
}

/** What a page job of an opened document carries of its password: nothing, unless it needed one (sealed to its bytes). */
export function sealedPasswordOf(opened: { password?: string }, bytes: Buffer): Pick<PageJobData, 'pdfPassword'> {
  return opened.password === undefined ? {} : { pdfPassword: sealPdfPassword(opened.password, bytes) };
}

/**
 * Opens the document without the password first, so that `password` is set only on a document that
 * cannot be opened without it; with a wrong password, the DocumentError says so.
 */
export async function openWithPassword(bytes: Buffer, pdfPassword: string | undefined): Promise<OpenedDocument & { password?: string }> {
  try {
    return await openDocument(bytes);
  } catch (error) {
    if (!(error instanceof DocumentError) || pdfPassword === undefined) throw error;
    return { ...(await openDocument(bytes, { password: pdfPassword })), password: pdfPassword };
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
 * size is already there (an earlier run staged it: same docId, same bytes).
 */
export async function stageSource(planned: PlannedDocument, storage: Storage): Promise<'uploaded' | 'already-staged'> {
  const key = planned.keys.source;
  const staged = await storage.stat(key).then(
    (object) => object.size === planned.bytes.length,
    (error: unknown) => {
      if (error instanceof StorageError && error.code === 'not_found') return false;
      throw error;
    },
  );
  if (staged) return 'already-staged';
  await storage.put(key, planned.bytes, { contentType: mimeType(planned.documentJob.type) });
  return 'uploaded';
}

function mimeType(type: DocumentType): string {
  return type === 'pdf' ? 'application/pdf' : `image/${type}`;
}
