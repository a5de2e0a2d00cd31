// The identity a worker writes into every page result: sha256 over the list of the files that decide
// the output (config.json, tokenizer.json and every *.safetensors shard), one line per file in name
// order: its own sha256, name and size. Two results with the same identity came from the same
// weights. Because only per-file digests enter it, `model check` derives the same identity for an
// s3:// prefix from its SHA256SUMS without fetching the weights. Hashing the shards locally costs a few
// seconds for a full-size checkpoint, once per worker start.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const READ_CHUNK_BYTES = 4 * 1024 * 1024;

export interface IdentityFile {
  name: string;
  size: number;
  /** 64 lowercase hex digits. */
  sha256: string;
}

/** Whether a file of a checkpoint folder enters its identity. */
export function decidesOutput(name: string): boolean {
  return name === 'config.json' || name === 'tokenizer.json' || name.endsWith('.safetensors');
}

/** 'sha256:<64 hex digits>' of the files that decide the output (the others are ignored). */
export function identityOfFiles(files: readonly IdentityFile[]): string {
  const lines = files
    .filter((file) => decidesOutput(file.name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((file) => `${file.sha256}  ${file.name}  ${file.size}\n`);
  return `sha256:${createHash('sha256').update(lines.join('')).digest('hex')}`;
}

/** The identity of a local checkpoint folder: every deciding file is read and hashed. */
export async function checkpointIdentity(modelDir: string): Promise<string> {
  const files: IdentityFile[] = [];
  for (const name of (await readdir(modelDir)).filter(decidesOutput)) {
    const file = path.join(modelDir, name);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK_BYTES })) hash.update(chunk as Buffer);
    files.push({ name, size: (await stat(file)).size, sha256: hash.digest('hex') });
  }
  return identityOfFiles(files);
}
