// The identity a worker writes into every page result: sha256 over the files that decide the output
// (config.json, tokenizer.json and every *.safetensors shard, each preceded by its name and size), so
// two results with the same identity came from the same weights. Reading the shards costs a few
// seconds for a full-size checkpoint, once per worker start.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const READ_CHUNK_BYTES = 4 * 1024 * 1024;

/** 'sha256:<64 hex digits>'. */
export async function checkpointIdentity(modelDir: string): Promise<string> {
  const names = (await readdir(modelDir)).filter((name) => name === 'config.json' || name === 'tokenizer.json' || name.endsWith('.safetensors')).sort();
  const hash = createHash('sha256');
  for (const name of names) {
    const file = path.join(modelDir, name);
    hash.update(`${name}\0${(await stat(file)).size}\0`);
    for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK_BYTES })) hash.update(chunk as Buffer);
  }
  return `sha256:${hash.digest('hex')}`;
}
