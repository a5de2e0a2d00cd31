// A document that arrives over HTTP (an upload, or a fetched https URL) is streamed into the storage
// under staging/uploads/ with a size limit, read from there by the producer like any other input,
// and removed once it is enqueued (its source then lives at staging/<docId>/). A body that exceeds
// the limit stops the write: nothing is left under its key.
import { randomUUID } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

import type { InputDocument } from '../producer/input-sources.js';
import { uploadKey } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { HttpError } from './http-error.js';

export interface StagedUpload {
  key: string;
  size: number;
  /** The upload as the producer's input, under `uri` (what results name as the document's source). */
  asInput(uri: string): InputDocument;
  /** Removes the staged bytes; removing them twice is harmless. */
  remove(): Promise<void>;
}

/** Streams `body` into the storage; rejects with HttpError 413 once it exceeds `maxBytes`, leaving nothing stored. */
export async function stageUpload(body: Readable, storage: Storage, maxBytes: number): Promise<StagedUpload> {
  const key = uploadKey(randomUUID());
  const counter = new ByteLimit(maxBytes);
  body.on('error', (error) => counter.destroy(error));
  body.pipe(counter);
  try {
    await storage.put(key, counter, { contentType: 'application/octet-stream' });
  } catch (error) {
    // The rest of a refused body is read and dropped, so that the answer gets through.
    body.unpipe(counter);
    body.resume();
    await storage.delete(key);
    throw counter.exceeded ? new HttpError(413, `the document is larger than the limit of ${maxBytes} bytes`) : error;
  }
  const size = counter.bytes;
  return {
    key,
    size,
    asInput: (uri) => ({ uri, size, bytes: () => storage.get(key) }),
    remove: () => storage.delete(key),
  };
}

/** Passes bytes through until more than `maxBytes` have come, then fails. */
class ByteLimit extends Transform {
  bytes = 0;
  exceeded = false;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.exceeded = true;
      done(new Error(`more than ${this.maxBytes} bytes`));
      return;
    }
    done(null, chunk);
  }
}
