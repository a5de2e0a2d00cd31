// `--model s3://bucket/prefix/`: the checkpoint files a SHA256SUMS names are fetched from S3 (an
// in-process s3rver) into the model cache, verified by checksum and size, renamed into place only
// when complete, and not fetched or hashed again on the next start.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, beforeEach, describe, test } from 'node:test';

import { CheckpointRefusedError, resolveModelDir } from '../../src/model/model-resolve.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage, StoredObject } from '../../src/storage/storage.js';
import { mirrorVerified, parseManifest, VERIFIED_MARKER_NAME, type MirrorSummary } from '../../src/storage/verified-mirror.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';

const FILES: Record<string, Buffer> = {
  'config.json': Buffer.from('{"model_type": "test"}\n'),
  'model.safetensors': Buffer.alloc(3 * 1024 * 1024, 7),
  'tokenizer.json': Buffer.from('{"version": "1.0"}\n'),
};

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** What `sha256sum * > SHA256SUMS` writes (two spaces: text mode). */
const manifestOf = (files: Record<string, Buffer>) => Object.entries(files).map(([name, bytes]) => `${sha256(bytes)}  ${name}\n`).join('');

/** Counts the objects streamed from `storage`. */
function countingStreams(storage: Storage, streamed: string[]): Storage {
  return Object.assign(Object.create(storage) as Storage, {
    getStream: (key: string): Promise<Readable> => {
      streamed.push(key);
      return storage.getStream(key);
    },
  });
}

describe('model fetch from S3', () => {
  let s3: S3Server;
  let root: string;
  let bucket: S3Storage;
  let cache: string;
  let prefixCount = 0;
  let prefix: string;
  let models: S3Storage;

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['models'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-model-fetch-'));
    bucket = openStorage('s3://models') as S3Storage;
  });
  after(async () => {
    bucket?.destroy();
    models?.destroy();
    await s3?.close();
    delete process.env.S3_ENDPOINT;
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(async () => {
    prefix = `ocr/v${++prefixCount}`;
    cache = path.join(root, `cache-${prefixCount}`);
    await upload(FILES, manifestOf(FILES));
    models?.destroy();
    models = openStorage(`s3://models/${prefix}`) as S3Storage;
  });

  async function upload(files: Record<string, Buffer>, manifest: string | undefined): Promise<void> {
    for (const [name, bytes] of Object.entries(files)) await bucket.put(`${prefix}/${name}`, bytes);
    if (manifest !== undefined) await bucket.put(`${prefix}/SHA256SUMS`, Buffer.from(manifest));
  }

  async function mirror(streamed: string[] = []): Promise<MirrorSummary> {
    return mirrorVerified(countingStreams(models, streamed), cache);
  }

  test('every file SHA256SUMS names is downloaded byte for byte', async () => {
    const summary = await mirror();
    assert.deepEqual(summary.downloaded.sort(), Object.keys(FILES).sort());
    for (const [name, bytes] of Object.entries(FILES)) assert.ok((await readFile(path.join(cache, name))).equals(bytes), name);
    assert.deepEqual((await readdir(cache)).sort(), [VERIFIED_MARKER_NAME, ...Object.keys(FILES)].sort());
  });

  test('a second start downloads nothing and reuses every verified file', async () => {
    await mirror();
    const streamed: string[] = [];
    const summary = await mirror(streamed);
    assert.deepEqual(streamed, []);
    assert.deepEqual({ downloaded: summary.downloaded, reused: summary.reused.sort() }, { downloaded: [], reused: Object.keys(FILES).sort() });
  });

  test('a local file changed since it was verified is downloaded again', async () => {
    await mirror();
    const file = path.join(cache, 'model.safetensors');
    await writeFile(file, Buffer.alloc(FILES['model.safetensors'].length, 9)); // same size, other bytes
    await utimes(file, new Date(), new Date(Date.now() + 5_000));
    const streamed: string[] = [];
    await mirror(streamed);
    assert.deepEqual(streamed, ['model.safetensors']);
    assert.ok((await readFile(file)).equals(FILES['model.safetensors']));
  });

  test('a file replaced in the bucket, with its new checksum, is downloaded again', async () => {
    await mirror();
    const changed = { ...FILES, 'config.json': Buffer.from('{"model_type": "test", "revision": 2}\n') };
    await upload({ 'config.json': changed['config.json'] }, manifestOf(changed));
    const streamed: string[] = [];
    await mirror(streamed);
    assert.deepEqual(streamed, ['config.json']);
    assert.ok((await readFile(path.join(cache, 'config.json'))).equals(changed['config.json']));
  });

  test('a file that does not match its checksum is refused and nothing of it is left', async () => {
    const wrong = { ...FILES, 'model.safetensors': Buffer.alloc(10, 1) };
    await upload({}, manifestOf(wrong));
    await assert.rejects(mirror(), (error: Error) => {
      assert.match(error.message, /model\.safetensors does not match SHA256SUMS: its sha256 is [0-9a-f]{64}, the manifest says [0-9a-f]{64}; upload the file again/);
      return true;
    });
    const left = await readdir(cache);
    assert.ok(!left.includes('model.safetensors'), `left: ${left}`);
    assert.ok(!left.some((name) => name.includes('partial')), `left: ${left}`);
  });

  test('a file whose size differs from the listing is refused', async () => {
    const lying = Object.assign(Object.create(models) as Storage, {
      async *list(listPrefix: string) {
        for await (const object of models.list(listPrefix)) yield (object.key === 'tokenizer.json' ? { ...object, size: object.size + 1 } : object) satisfies StoredObject;
      },
    });
    await assert.rejects(mirrorVerified(lying, cache), /tokenizer\.json: received \d+ bytes, the listing says \d+/);
  });

  test('a prefix without SHA256SUMS says how to make one', async () => {
    await bucket.delete(`${prefix}/SHA256SUMS`);
    await assert.rejects(mirror(), /has no SHA256SUMS: in the folder you upload, run `sha256sum \* > SHA256SUMS`/);
  });

  test('SHA256SUMS naming a file that is not there is an error naming it', async () => {
    await upload({}, `${manifestOf(FILES)}${sha256(Buffer.from('x'))}  missing.safetensors\n`);
    await assert.rejects(mirror(), /SHA256SUMS names missing\.safetensors, but there is no such object/);
  });

  test('files of the cache folder SHA256SUMS does not name are removed', async () => {
    await mirror();
    await writeFile(path.join(cache, 'model-00001-of-00002.safetensors'), 'an older shard');
    await mirror();
    assert.deepEqual((await readdir(cache)).sort(), [VERIFIED_MARKER_NAME, ...Object.keys(FILES)].sort());
  });

  // These files are no real checkpoint: fetched, then refused by the check every worker runs.
  test('resolveModelDir fetches an s3:// model into <cache>/<bucket>/<prefix>/', async () => {
    await assert.rejects(resolveModelDir(`s3://models/${prefix}/`, { cacheDir: cache }), CheckpointRefusedError);
    const dir = path.join(cache, 'models', ...prefix.split('/'));
    assert.ok((await readFile(path.join(dir, 'config.json'))).equals(FILES['config.json']));
  });

  test('SCRIPTORIUM_MODEL may name an s3:// model too', async () => {
    process.env.SCRIPTORIUM_MODEL = `s3://models/${prefix}`;
    try {
      await assert.rejects(resolveModelDir(undefined, { cacheDir: cache }), CheckpointRefusedError);
      const dir = path.join(cache, 'models', ...prefix.split('/'));
      assert.equal((await stat(path.join(dir, 'model.safetensors'))).size, FILES['model.safetensors'].length);
    } finally {
      delete process.env.SCRIPTORIUM_MODEL;
    }
  });
});

describe('SHA256SUMS', () => {
  const digest = 'ab'.repeat(32);

  test('text and binary mode lines are read, and the manifest does not list itself', () => {
    assert.deepEqual(parseManifest(`${digest}  config.json\n${digest.toUpperCase()} *model.safetensors\r\n\n${digest}  SHA256SUMS\n`, 'S'), [
      { name: 'config.json', sha256: digest },
      { name: 'model.safetensors', sha256: digest },
    ]);
  });

  test('a line that is not sha256sum output is an error with its line number', () => {
    assert.throws(() => parseManifest(`${digest}  config.json\nconfig.json ${digest}\n`, 'S'), /S line 2 is not "<sha256> <file name>"/);
  });

  test('names with a folder, hidden names and repeated names are refused', () => {
    assert.throws(() => parseManifest(`${digest}  sub/model.safetensors\n`, 'S'), /only plain file names/);
    assert.throws(() => parseManifest(`${digest}  .verified.json\n`, 'S'), /only plain file names/);
    assert.throws(() => parseManifest(`${digest}  a\n${digest}  a\n`, 'S'), /names a twice/);
  });

  test('an empty manifest is an error', () => {
    assert.throws(() => parseManifest('\n', 'S'), /S names no file/);
  });
});
