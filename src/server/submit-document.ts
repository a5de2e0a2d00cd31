// POST /v1/documents: one document, as a multipart upload (the file in the form field "document",
// options as further fields), or as JSON naming an s3:// object or an https URL (options as further
// members). Uploads and fetched URLs are streamed to staging under a size limit; then everything goes
// through the producer's enqueue, exactly as `scriptorium enqueue` would queue it, each new document
// admitted first (submit-admission.ts: queue capacity and the key's quotas) at its key's priority class.
import { Readable } from 'node:stream';

import busboy from 'busboy';
import type { Request } from 'express';

import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { enqueueDocuments, type EnqueueSummary } from '../producer/enqueue.js';
import type { ProducerInput } from '../producer/input-sources.js';
import { classPriority } from '../queue/job-options.js';
import type { Reservation } from '../queue/key-quotas.js';
import type { Storage } from '../storage/storage.js';
import type { ApiKey } from './api-keys.js';
import type { SubmitAnswer } from './api-types.js';
import type { DocumentCallbacks } from './document-callbacks.js';
import { documentLinks } from './document-status.js';
import { HttpError } from './http-error.js';
import type { SubmitAdmission } from './submit-admission.js';
import { checkSubmitOptions } from './submit-options.js';
import { stageUpload, type StagedUpload } from './upload-staging.js';
import type { RedisConnectionOptions } from '../queue/redis.js';

export const UPLOAD_FIELD = 'document';
/** Form fields besides the file, and the bytes of one field. */
const MAX_FIELDS = 16;
const MAX_FIELD_BYTES = 4096;
/** How long fetching an https URL may take. */
const FETCH_TIMEOUT_MS = 120_000;

export interface SubmitSettings {
  storage: Storage;
  /** Options for `client` connections (see redisOptions). */
  connection: RedisConnectionOptions;
  /** The variant of a submission that names none. */
  defaultVariant: Variant;
  /** Tries per page (enqueue's --attempts). Default: enqueue's. */
  attempts?: number;
  /** Largest document accepted, uploaded, fetched or named by its s3:// URI. */
  maxDocumentBytes: number;
  /** Documents of more pages are refused (422, with the reason). Default: no limit. */
  maxDocumentPages?: number;
  /** Hosts whose https URLs may be submitted (lowercase); empty: none. */
  fetchHosts: readonly string[];
  /** Where callback URLs are registered; undefined: the server sends no callbacks. */
  callbacks?: DocumentCallbacks;
  admission: SubmitAdmission;
}

/** `key`: the key the request came with, whose quotas and priority class apply. */
export async function submitDocument(request: Request, settings: SubmitSettings, key: ApiKey): Promise<SubmitAnswer> {
  if (request.is('multipart/form-data')) {
    const { upload, fields, filename } = await receiveUpload(request, settings);
    try {
      return await enqueueOne({ kind: 'document', document: upload.asInput(`upload:${filename}`) }, fields, settings, key);
    } finally {
      await upload.remove();
    }
  }
  if (!request.is('application/json')) throw new HttpError(415, 'send the document as multipart/form-data, or JSON with "uri" or "url"');
  const body = request.body as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'the JSON body must be an object');
  const { uri, url, ...fields } = body as Record<string, unknown>;
  if ((uri === undefined) === (url === undefined)) throw new HttpError(400, 'give exactly one of "uri" (s3://bucket/key) and "url" (https://…)');
  if (uri !== undefined) {
    if (typeof uri !== 'string' || !/^s3:\/\/[^/]+\/.+/.test(uri)) throw new HttpError(400, '"uri" must be an s3://bucket/key URI');
    return enqueueOne({ kind: 's3-object', url: uri }, fields, settings, key);
  }
  const source = checkedFetchUrl(url, settings.fetchHosts);
  const upload = await fetchToStaging(source, settings);
  try {
    return await enqueueOne({ kind: 'document', document: upload.asInput(source.href) }, fields, settings, key);
  } finally {
    await upload.remove();
  }
}

async function enqueueOne(input: ProducerInput, fields: Record<string, unknown>, settings: SubmitSettings, key: ApiKey): Promise<SubmitAnswer> {
  const { callbackUrl, ...options } = fields;
  const { ocr, priority, pdfPassword } = checkSubmitOptions(options, settings.defaultVariant);
  let callback: string | undefined;
  if (callbackUrl !== undefined) {
    if (settings.callbacks === undefined) throw new HttpError(400, 'this server sends no callbacks: it has no SCRIPTORIUM_CALLBACK_SECRET');
    callback = settings.callbacks.checkUrl(callbackUrl);
  }
  // An archive holds several documents: each is admitted, and those not queued when queueing fails are given back.
  const notYetQueued = new Map<string, Reservation>();
  let summary: EnqueueSummary;
  try {
    summary = await enqueueDocuments([input], {
      ocr,
      priority: classPriority(key.quota.priorityClass, priority),
      pdfPassword,
      attempts: settings.attempts,
      storage: settings.storage,
      connection: settings.connection,
      limits: { maxBytes: settings.maxDocumentBytes, maxPages: settings.maxDocumentPages },
      admit: async (document) => {
        notYetQueued.set(document.docId, await settings.admission.admit(key, document));
      },
      onDocument: (document) => {
        if (document.state === 'enqueued') notYetQueued.delete(document.docId);
      },
    });
  } catch (error) {
    await settings.admission.release([...notYetQueued.values()]);
    throw error;
  }
  const rejected = summary.rejected[0];
  if (rejected !== undefined) throw new HttpError(422, `${rejected.uri}: ${rejected.reason}`);
  const queued = summary.queued[0];
  if (callback !== undefined) await settings.callbacks?.register(queued.docId, callback);
  return { docId: queued.docId, state: queued.state, pages: queued.pages, links: documentLinks(queued.docId) };
}

interface ReceivedUpload {
  upload: StagedUpload;
  fields: Record<string, string>;
  filename: string;
}

/** Streams the form's one file to staging while collecting its other fields. */
function receiveUpload(request: Request, settings: SubmitSettings): Promise<ReceivedUpload> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: request.headers, limits: { files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS + 1 } });
    } catch (error) {
      reject(new HttpError(400, `malformed multipart request: ${(error as Error).message}`));
      return;
    }
    const fields: Record<string, string> = {};
    let filename = 'document';
    let staging: Promise<StagedUpload> | undefined;
    let problem: HttpError | undefined;
    const refuse = (error: HttpError) => (problem ??= error);
    let finished = false;
    const finish = async (error?: HttpError) => {
      if (finished) return;
      finished = true;
      const upload = await staging?.catch((stagingError: unknown) => {
        refuse(stagingError instanceof HttpError ? stagingError : new HttpError(503, 'the storage did not take the upload; try again'));
        return undefined;
      });
      const failure = error ?? problem ?? (upload === undefined ? new HttpError(400, `no file in the form field "${UPLOAD_FIELD}"`) : undefined);
      if (failure === undefined && upload !== undefined) {
        resolve({ upload, fields, filename });
        return;
      }
      await upload?.remove();
      reject(failure);
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) refuse(new HttpError(413, `the form field "${name}" is longer than ${MAX_FIELD_BYTES} bytes`));
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (name !== UPLOAD_FIELD || staging !== undefined) {
        stream.resume();
        refuse(new HttpError(400, `send one file, in the form field "${UPLOAD_FIELD}" (got a file in "${name}")`));
        return;
      }
      filename = cleanFilename(info.filename);
      staging = stageUpload(stream, settings.storage, settings.maxDocumentBytes);
      staging.catch(() => undefined); // settled in finish()
    });
    for (const limit of ['filesLimit', 'fieldsLimit', 'partsLimit'] as const) {
      parser.on(limit, () => refuse(new HttpError(413, `send one file and at most ${MAX_FIELDS} other fields`)));
    }
    parser.on('error', (error: Error) => void finish(new HttpError(400, `malformed multipart request: ${error.message}`)));
    parser.on('close', () => void finish());
    request.pipe(parser);
  });
}

/** The file name's last segment, without control characters, at most 200 characters; 'document' when none is left. */
function cleanFilename(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 200);
  return clean === '' ? 'document' : clean;
}

function checkedFetchUrl(url: unknown, hosts: readonly string[]): URL {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new HttpError(400, '"url" must be an absolute https:// URL');
  }
  if (parsed.protocol !== 'https:') throw new HttpError(400, `"url" must use https (got ${parsed.protocol})`);
  if (!hosts.includes(parsed.hostname.toLowerCase())) {
    throw new HttpError(403, `this server does not fetch from ${parsed.hostname}: its SCRIPTORIUM_FETCH_HOSTS does not list that host`);
  }
  return parsed;
}

/** GETs the URL (redirects refused: they could lead to a host not allowed) into staging. */
async function fetchToStaging(url: URL, settings: SubmitSettings): Promise<StagedUpload> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (error) {
    throw new HttpError(502, `cannot fetch ${url.href}: ${(error as Error).message}`);
  }
  if (!response.ok || response.body === null) throw new HttpError(502, `fetching ${url.href} answered ${response.status} ${response.statusText}`);
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  if (length > settings.maxDocumentBytes) {
    await response.body.cancel();
    throw new HttpError(413, `the document is larger than the limit of ${settings.maxDocumentBytes} bytes`);
  }
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream);
  try {
    return await stageUpload(body, settings.storage, settings.maxDocumentBytes);
  } finally {
    body.destroy();
  }
}
