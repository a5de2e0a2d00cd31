// Document ids and the storage keys derived from them (DESIGN.md "Data flow"): the same bytes with
// the same output-changing options always get the same docId, so enqueueing twice is a no-op and a
// crashed run resumes where its results stop.
import { createHash } from 'node:crypto';

import type { DocumentType } from '../documents/document.js';
import type { DocumentKeys, OcrJobOptions } from '../jobs/job-types.js';
import { joinKey } from '../storage/storage.js';

/**
 * 32 hex digits (128 bits) of the sha256: a collision is only expected after about 2^64 documents, and
 * the id stays short in storage keys, job ids and log lines. Longer would buy nothing; shorter would
 * make a collision between two different documents of one large archive conceivable.
 */
const DOC_ID_HEX_DIGITS = 32;
const DOC_ID_PATTERN = new RegExp(`^[0-9a-f]{${DOC_ID_HEX_DIGITS}}$`);

/**
 * Hex sha256 over a canonical JSON of the options that change the output, then the source bytes.
 * The JSON comes first because it is self-delimiting, so no (options, bytes) pair can hash like another.
 * Options are picked by name into a fixed key order: key order and extra properties do not matter.
 */
export function documentId(sourceBytes: Buffer, options: OcrJobOptions): string {
  const { variant, task, mode, dpi, longestSide, maxNewTokens } = options;
  // JSON.stringify leaves out an unset dpi or longestSide, so ids made before longestSide existed stay the same.
  const canonicalOptions = JSON.stringify({ dpi, longestSide, maxNewTokens: maxNewTokens ?? null, mode, task, variant });
  return createHash('sha256').update(canonicalOptions).update(sourceBytes).digest('hex').slice(0, DOC_ID_HEX_DIGITS);
}

/** staging/<docId>/source.<type> and results/<docId>/; the document type is the extension ('pdf', 'jpeg', 'tiff', …). */
export function documentKeys(docId: string, type: DocumentType): DocumentKeys {
  if (!DOC_ID_PATTERN.test(docId)) {
    throw new RangeError(`docId must be ${DOC_ID_HEX_DIGITS} lowercase hex digits, as documentId returns; got ${JSON.stringify(docId)}`);
  }
  return { source: joinKey('staging', docId, `source.${type}`), results: `${joinKey('results', docId)}/` };
}
