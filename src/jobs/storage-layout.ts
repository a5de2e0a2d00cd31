// Every key the pipeline reads or writes below a storage root, built and recognised here only:
//
//   staging/<docId>/source.<type>          the document's bytes, staged once by the producer
//   staging/<docId>/job.json               its document job (source uri, options), for `reconcile`
//   results/<docId>/pages/<nnnn>.json|.md  one page's result (1-based page, four digits)
//   results/<docId>/attempts/<nnnn>-<attempt id>.json|.md  a page as one try of its job read it, until
//                                          the job's completion in Redis makes it the page's result
//   results/<docId>/images/<nnnn>_<n>.png  the n-th image region of a page, as its markdown links it
//   results/<docId>/document.md|.json      the assembled document
//   results/<docId>/_DONE                  written last: the document is finished
//   results/<docId>/_FAILED_PAGES          written last instead of _DONE when pages failed: their reasons
//   results/<docId>/_CANCELLED             the document was cancelled (DELETE over HTTP) before all its pages ran
//   staging/uploads/<uuid>                 a document arriving over HTTP, until it is staged under its docId
//   rejected/<sha256(uri), 32 hex>.json    an input that is no usable document, with its reason
//   manifests/<UTC time>-<8 hex>.json      one enqueue or run: each input's uri, docId and result keys
//   by-input/<input name>                  file storage only: a symbolic link to the input's results/<docId>/
//
// A new kind of object gets its builder here, and its top-level folder in PIPELINE_FOLDERS.
import { createHash } from 'node:crypto';

import type { DocumentType } from '../documents/document-type.js';
import { joinKey } from '../storage/storage-key.js';

/**
 * A docId is 32 hex digits (128 bits) of a sha256 (producer/doc-id.ts): a collision is only expected
 * after about 2^64 documents, and the id stays short in keys, job ids and log lines.
 */
export const DOC_ID_HEX_DIGITS = 32;
const DOC_ID_PATTERN = new RegExp(`^[0-9a-f]{${DOC_ID_HEX_DIGITS}}$`);

const STAGING = 'staging';
const RESULTS = 'results';
const REJECTED = 'rejected';
const MANIFESTS = 'manifests';
const BY_INPUT = 'by-input';
const DONE_MARKER = '_DONE';
const FAILED_PAGES_MARKER = '_FAILED_PAGES';
const CANCELLED_MARKER = '_CANCELLED';
const UPLOADS = `${STAGING}/uploads`;

/** The top-level folders the pipeline writes, each ending in '/'. */
const PIPELINE_FOLDERS: readonly string[] = [STAGING, RESULTS, REJECTED, MANIFESTS, BY_INPUT].map((folder) => `${folder}/`);

/** Storage keys of one document, as job data carries them. */
export interface DocumentKeys {
  /** staging/<docId>/source.<type> */
  source: string;
  /** results/<docId>/ */
  results: string;
}

/** The assembled document's objects. */
export interface DocumentResultKeys {
  /** results/<docId>/document.md */
  markdown: string;
  /** results/<docId>/document.json */
  json: string;
  /** results/<docId>/_DONE: every page succeeded */
  done: string;
  /** results/<docId>/_FAILED_PAGES: assembled, with failed pages */
  failedPages: string;
}

export function isDocId(value: string): boolean {
  return DOC_ID_PATTERN.test(value);
}

/** `docId` unchanged, or a RangeError: an id that documentId cannot have made never becomes a key. */
export function checkDocId(docId: string): string {
  if (!isDocId(docId)) {
    throw new RangeError(`docId must be ${DOC_ID_HEX_DIGITS} lowercase hex digits, as documentId returns; got ${JSON.stringify(docId)}`);
  }
  return docId;
}

/** staging/<docId>/source.<type> and results/<docId>/; the document type is the extension ('pdf', 'jpeg', 'tiff', …). */
export function documentKeys(docId: string, type: DocumentType): DocumentKeys {
  return { source: joinKey(STAGING, checkDocId(docId), `source.${type}`), results: resultsFolder(docId) };
}

/** staging/<docId>/job.json: the document job it was queued with, to queue it again after Redis lost it. */
export function stagedJobKey(docId: string): string {
  return joinKey(STAGING, checkDocId(docId), 'job.json');
}

/**
 * staging/<docId prefix>: where `reconcile` lists staged documents, all of them or those whose docId
 * starts with `docIdPrefix` (lowercase hex digits).
 */
export function stagedDocumentsFolder(docIdPrefix = ''): string {
  if (!/^[0-9a-f]*$/.test(docIdPrefix) || docIdPrefix.length > DOC_ID_HEX_DIGITS) {
    throw new RangeError(`a docId prefix is up to ${DOC_ID_HEX_DIGITS} lowercase hex digits; got ${JSON.stringify(docIdPrefix)}`);
  }
  return `${STAGING}/${docIdPrefix}`;
}

/** The docId of a key under staging/<docId>/; undefined for any other key (uploads included). */
export function docIdOfStagedKey(key: string): string | undefined {
  const match = new RegExp(`^${STAGING}/([0-9a-f]{${DOC_ID_HEX_DIGITS}})/`).exec(key);
  return match?.[1];
}

/** results/<docId>/ */
export function resultsFolder(docId: string): string {
  return `${joinKey(RESULTS, checkDocId(docId))}/`;
}

export function documentResultKeys(docId: string): DocumentResultKeys {
  const folder = resultsFolder(docId);
  return {
    markdown: `${folder}document.md`,
    json: `${folder}document.json`,
    done: `${folder}${DONE_MARKER}`,
    failedPages: `${folder}${FAILED_PAGES_MARKER}`,
  };
}

/** results/<docId>/pages/<nnnn>.json or .md: 1-based, zero-padded to four digits. */
export function pageResultKey(docId: string, page: number, extension: 'json' | 'md'): string {
  return `${pageResultsFolder(docId)}${pageName(page)}.${extension}`;
}

/** A page number as keys name it: 1-based, zero-padded to four digits. */
function pageName(page: number): string {
  if (!(Number.isSafeInteger(page) && page >= 1)) throw new RangeError(`a page number is an integer from 1; got ${page}`);
  return String(page).padStart(4, '0');
}

/** The docId of a results/<docId>/_FAILED_PAGES key; undefined for any other key. */
export function docIdOfFailedPagesMarker(key: string): string | undefined {
  const match = new RegExp(`^${RESULTS}/([0-9a-f]{${DOC_ID_HEX_DIGITS}})/${FAILED_PAGES_MARKER}$`).exec(key);
  return match?.[1];
}

/** The docId of a results/<docId>/_DONE key; undefined for any other key. */
export function docIdOfDoneMarker(key: string): string | undefined {
  const match = new RegExp(`^${RESULTS}/([0-9a-f]{${DOC_ID_HEX_DIGITS}})/${DONE_MARKER}$`).exec(key);
  return match?.[1];
}

/** results/, where retry looks for _FAILED_PAGES (--failed) and _DONE (--flagged) markers. */
export const RESULTS_FOLDER = `${RESULTS}/`;

/** results/<docId>/pages/ */
export function pageResultsFolder(docId: string): string {
  return `${resultsFolder(docId)}pages/`;
}

/** The JSON and markdown one try of a page job wrote for a page, before its completion committed them. */
export interface PageAttemptKeys {
  /** results/<docId>/attempts/<nnnn>-<attempt id>.json */
  key: string;
  /** results/<docId>/attempts/<nnnn>-<attempt id>.md */
  markdownKey: string;
}

/** results/<docId>/attempts/ */
export function pageAttemptsFolder(docId: string): string {
  return `${resultsFolder(docId)}attempts/`;
}

/**
 * Where one try of a page job writes a page: results/<docId>/attempts/<nnnn>-<attemptId>.json and
 * .md. `attemptId` names the try (a UUID), so two workers reading the same page never share a key.
 */
export function pageAttemptKeys(docId: string, page: number, attemptId: string): PageAttemptKeys {
  if (!/^[0-9a-f-]{1,64}$/.test(attemptId)) throw new RangeError(`an attempt id is up to 64 lowercase hex digits and dashes; got ${JSON.stringify(attemptId)}`);
  const stem = `${pageAttemptsFolder(docId)}${pageName(page)}-${attemptId}`;
  return { key: `${stem}.json`, markdownKey: `${stem}.md` };
}

/**
 * The n-th (0-based) image region of a page: results/<docId>/images/<nnnn>_<n>.png, and the link the
 * markdown gives it, relative to the document's results folder (where document.md is).
 */
export function pageImage(docId: string, page: number, index: number): { key: string; link: string } {
  const link = `images/${pageName(page)}_${index}.png`;
  return { key: `${resultsFolder(docId)}${link}`, link };
}

/** results/<docId>/_CANCELLED */
export function cancelledMarkerKey(docId: string): string {
  return `${resultsFolder(docId)}${CANCELLED_MARKER}`;
}

/** staging/uploads/<uploadId>: `uploadId` is a random UUID, never a docId. */
export function uploadKey(uploadId: string): string {
  return joinKey(UPLOADS, uploadId);
}

/** The folder of uploadKey's objects, for listing. */
export const UPLOADS_FOLDER = `${UPLOADS}/`;

/** rejected/<sha256(uri), 32 hex>.json: rejected inputs have no docId, so their uri names the record. */
export function rejectedInputKey(uri: string): string {
  return joinKey(REJECTED, `${createHash('sha256').update(uri).digest('hex').slice(0, 32)}.json`);
}

/** manifests/<20261203T092500Z>-<8 hex>.json: keys sort by the time they were written. */
export function runManifestKey(writtenAt: Date, suffix: string): string {
  const stamp = writtenAt.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  return joinKey(MANIFESTS, `${stamp}-${suffix}.json`);
}

/** manifests/, listed by `results` to find an input's docId. */
export const MANIFESTS_FOLDER = `${MANIFESTS}/`;

/** by-input/<name>: `name` is a '/'-separated path made from an input's uri (output/input-links.ts). */
export function inputLinkKey(name: string): string {
  return joinKey(BY_INPUT, name);
}

/** Whether `key` (relative to the storage root) lies in a folder the pipeline writes. */
export function isPipelineKey(key: string): boolean {
  return PIPELINE_FOLDERS.some((folder) => key.startsWith(folder));
}
