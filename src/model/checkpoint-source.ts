// The files of a checkpoint folder, local or under an s3:// prefix, read without fetching weights:
// a listing with sizes, the first bytes of a file (a safetensors header), or a whole small file.
import { open, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import { S3Storage } from '../storage/s3-storage.js';

export interface CheckpointSource {
  /** The folder or s3:// prefix, as the user named it. */
  readonly location: string;
  /** Plain files directly in the folder and their sizes in bytes. */
  list(): Promise<Map<string, number>>;
  /** The first `bytes` bytes of `name` (fewer when the file is shorter). */
  head(name: string, bytes: number): Promise<Buffer>;
  read(name: string): Promise<Buffer>;
  close(): void;
}

export function openCheckpointSource(location: string): CheckpointSource {
  return location.startsWith('s3://') ? s3Source(location) : localSource(location);
}

function localSource(dir: string): CheckpointSource {
  return {
    location: dir,
    async list() {
      const sizes = new Map<string, number>();
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const info = await stat(path.join(dir, entry.name)).catch(() => undefined); // follows links
        if (info?.isFile()) sizes.set(entry.name, info.size);
      }
      return sizes;
    },
    async head(name, bytes) {
      const file = await open(path.join(dir, name), 'r');
      try {
        const buffer = Buffer.alloc(bytes);
        const { bytesRead } = await file.read(buffer, 0, bytes, 0);
        return buffer.subarray(0, bytesRead);
      } finally {
        await file.close();
      }
    },
    read: (name) => readFile(path.join(dir, name)),
    close: () => undefined,
  };
}

function s3Source(url: string): CheckpointSource {
  const storage = new S3Storage(url);
  return {
    location: url,
    async list() {
      const sizes = new Map<string, number>();
      for await (const object of storage.list('')) sizes.set(object.key, object.size);
      return sizes;
    },
    async head(name, bytes) {
      // The stream is abandoned once the header is in: the weights behind it are never transferred in full.
      const stream = await storage.getStream(name);
      const chunks: Buffer[] = [];
      let total = 0;
      try {
        for await (const chunk of stream) {
          chunks.push(chunk as Buffer);
          total += (chunk as Buffer).length;
          if (total >= bytes) break;
        }
      } finally {
        stream.destroy();
      }
      return Buffer.concat(chunks).subarray(0, bytes);
    },
    read: (name) => storage.get(name),
    close: () => storage.destroy(),
  };
}
