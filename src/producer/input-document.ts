// What the producer's inputs expand to: one document to plan, wherever it came from. Bytes are read
// on demand (files, S3 objects) or were read while streaming through an archive (archive entries).

export interface InputDocument {
  /** Where the document came from: an absolute file path, s3://bucket/key, or /abs/archive.zip!inner/path.pdf. */
  uri: string;
  /** Size in bytes. */
  size: number;
  /** The whole document; files and S3 objects are read on each call, archive entries are held in memory. */
  bytes(): Promise<Buffer>;
  /** A local file: planned and staged by reading it as a stream (PDFs: by the renderer's thread), never into memory whole. */
  path?: string;
}

/**
 * Called for every input or archive entry left out, with the reason: a path that escapes the archive,
 * a link, a device, an entry over a size limit, an unreadable input. Expansion goes on after it.
 */
export type SkipListener = (uri: string, reason: string) => void;

/**
 * What becomes of an input whose storage stays unreachable after the client's retries:
 * - 'reject' (`enqueue`, `run`): the input is rejected with the reason, like any input that cannot be
 *   read, and the run goes on;
 * - 'throw': the failure rejects, for a caller that will be handed the input again (the watch's event
 *   source redelivers it).
 */
export type UnreachableInputPolicy = 'reject' | 'throw';

/** Applies the policy to a transient failure while reading `uri`: skips it with the reason, or rethrows. */
export function unreachableInput(policy: UnreachableInputPolicy, skip: SkipListener, uri: string, error: Error): void {
  if (policy === 'throw') throw error;
  skip(uri, `cannot read it: ${error.message}`);
}
