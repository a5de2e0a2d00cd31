// file:// specifics: writes are atomic (a partial object is never visible under its key), failed
// writes leave nothing behind, and listings follow S3's byte order across directory levels.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { FileStorage } from '../../src/storage/file-storage.js';
import type { Storage } from '../../src/storage/storage.js';

let root: string;
let storage: Storage;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-file-storage-'));
  storage = new FileStorage(root);
});
after(() => rm(root, { recursive: true, force: true }));

test('while a stream is being written, its key is neither listed nor on disk under its final name', async () => {
  const body = new PassThrough();
  const putting = storage.put('slow/object.bin', body);
  body.write(Buffer.alloc(64 * 1024, 1));
  await waitForBytesOnDisk(path.join(root, 'slow'), 64 * 1024);

  assert.deepEqual(await listKeys(storage, 'slow/'), []);
  assert.equal(await storage.exists('slow/object.bin'), false);
  assert.equal((await readdir(path.join(root, 'slow'))).includes('object.bin'), false);

  body.end(Buffer.alloc(1024, 2));
  await putting;
  assert.deepEqual(await listKeys(storage, 'slow/'), ['slow/object.bin']);
  assert.equal((await storage.stat('slow/object.bin')).size, 65 * 1024);
});

test('while a replacement is being written, get returns the previous object whole', async () => {
  await storage.put('replace/object.txt', Buffer.from('old'));
  const body = new PassThrough();
  const putting = storage.put('replace/object.txt', body);
  body.write('new, ');
  await waitForBytesOnDisk(path.join(root, 'replace'), 'old'.length + 'new, '.length);

  assert.equal((await storage.get('replace/object.txt')).toString(), 'old');

  body.end('complete');
  await putting;
  assert.equal((await storage.get('replace/object.txt')).toString(), 'new, complete');
});

test('a put whose source stream fails rejects and leaves no file behind', async () => {
  const body = new PassThrough();
  const putting = storage.put('failed/object.bin', body);
  body.write(Buffer.alloc(1024));
  await waitForBytesOnDisk(path.join(root, 'failed'), 1024);
  body.destroy(new Error('source connection lost'));

  await assert.rejects(putting, { name: 'StorageError', code: 'permanent', message: /source connection lost/ });
  assert.deepEqual(await readdir(path.join(root, 'failed')), []);
});

test('a delete removes the folders it leaves empty, up to the root and no further', async () => {
  await storage.put('pruned/a/b/one.txt', Buffer.from('1'));
  await storage.put('pruned/keep.txt', Buffer.from('2'));
  await storage.delete('pruned/a/b/one.txt');
  assert.deepEqual(await readdir(path.join(root, 'pruned')), ['keep.txt']);
  await storage.delete('pruned/keep.txt');
  assert.equal((await readdir(root)).includes('pruned'), false);
  assert.ok((await stat(root)).isDirectory());
});

test('list orders keys by UTF-8 bytes across directory levels, as S3 does', async () => {
  for (const key of ['order/a/b', 'order/a-c', 'order/a.txt', 'order/é', 'order/z']) await storage.put(key, Buffer.from(key));
  assert.deepEqual(await listKeys(storage, 'order/'), ['order/a-c', 'order/a.txt', 'order/a/b', 'order/z', 'order/é']);
});

test('a key that is also a directory of other keys cannot be stored, with the reason', async () => {
  await storage.put('collide/a/b', Buffer.from('x'));
  await assert.rejects(storage.put('collide/a', Buffer.from('y')), {
    name: 'StorageError',
    code: 'permanent',
    message: /in file storage 'a' and 'a\/b' cannot both exist/,
  });
  assert.equal(await storage.exists('collide/a'), false);
});

test('names starting with .storage-partial- are reserved for writes in progress', async () => {
  await assert.rejects(storage.put('reserved/.storage-partial-1', Buffer.from('x')), {
    name: 'StorageError',
    code: 'permanent',
    message: /reserved for writes in progress/,
  });
});

test('the storage URL is the file:// URL of the root directory', () => {
  assert.equal(storage.url, `file://${root}`);
});

/** Waits until the files in `directory` (the partial write) hold at least `bytes` bytes. */
async function waitForBytesOnDisk(directory: string, bytes: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const names = await readdir(directory).catch(() => []);
    const sizes = await Promise.all(names.map(async (name) => (await stat(path.join(directory, name))).size));
    if (sizes.reduce((sum, size) => sum + size, 0) >= bytes) return;
    await delay(10);
  }
  throw new Error(`no partial file of ${bytes} bytes appeared in ${directory}`);
}

async function listKeys(storage: Storage, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of storage.list(prefix, { recursive: true })) keys.push(object.key);
  return keys;
}
