// Document ids (docs/design.md "Data flow"): the same bytes with the same output-changing options always
// get the same docId, so enqueueing twice is a no-op and a crashed run resumes where its results stop.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';

import type { OcrJobOptions } from '../jobs/job-types.js';
import { DOC_ID_HEX_DIGITS } from '../jobs/storage-layout.js';

/**
 * Hex sha256 over a canonical JSON of the options that change the output, then the source bytes.
 * The JSON comes first because it is self-delimiting, so no (options, bytes) pair can hash like another.
 * Options are picked by name into a fixed key order: key order and extra properties do not matter.
 */
export function documentId(sourceBytes: Buffer, options: OcrJobOptions): string {
  return docIdOf(optionsHash(options).update(sourceBytes));
}

/** documentId of the bytes of a local file, read as a stream: the file is never held whole. */
export async function documentIdOfFile(filePath: string, options: OcrJobOptions): Promise<string> {
  const hash = optionsHash(options);
  for await (const chunk of createReadStream(filePath)) hash.update(chunk as Buffer);
  return docIdOf(hash);
}

function optionsHash(options: OcrJobOptions): Hash {
  const { variant, task, mode, dpi, longestSide, maxNewTokens } = options;
  // JSON.stringify leaves out an unset dpi or longestSide, so ids made before longestSide existed stay the same.
  const canonicalOptions = JSON.stringify({ dpi, longestSide, maxNewTokens: maxNewTokens ?? null, mode, task, variant });
  return createHash('sha256').update(canonicalOptions);
}

function docIdOf(hash: Hash): string {
  return hash.digest('hex').slice(0, DOC_ID_HEX_DIGITS);
}
