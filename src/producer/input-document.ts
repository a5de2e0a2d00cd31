// What the producer's inputs expand to: one document to plan, wherever it came from. Bytes are read
// on demand (files, S3 objects) or were read while streaming through an archive (archive entries).

export interface InputDocument {
  /** Where the document came from: an absolute file path, s3://bucket/key, or /abs/archive.zip!inner/path.pdf. */
  uri: string;
  /** Size in bytes. */
  size: number;
  /** The whole document; files and S3 objects are read on each call, archive entries are held in memory. */
  bytes(): Promise<Buffer>;
}

/**
 * Called for every input or archive entry left out, with the reason: a path that escapes the archive,
 * a link, a device, an entry over a size limit, an unreadable input. Expansion goes on after it.
 */
export type SkipListener = (uri: string, reason: string) => void;
