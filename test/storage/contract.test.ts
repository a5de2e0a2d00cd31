// The Storage contract: one suite, run against file:// (a temp directory) and s3://, whatever the
// pipeline relies on must hold for every backend. The s3:// server: a real S3 when
// SCRIPTORIUM_TEST_S3_URL names one (npm run test:integration), else MinIO in a container where a
// container runtime answers (test-services.ts), else the in-process s3rver. One S3 per run, since
// the AWS SDK takes its credentials from this process's environment.
import assert from 'node:assert/strict';
import { createHash, randomFillSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';

import { FileStorage } from '../../src/storage/file-storage.js';
import { S3Storage } from '../../src/storage/s3-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { startS3Server, useS3rverCredentials } from '../support/s3-server.js';
import { startMinioContainer, TEST_SERVICES, useMinioCredentials } from '../support/test-services.js';

interface OpenedBackend {
  storage: Storage;
  close(): Promise<void>;
}

const MIB = 1024 * 1024;
const LARGE_BYTES = 20 * MIB;
const MANY_KEYS = 1100; // more than one 1000-key ListObjectsV2 page

storageContract('file://', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-storage-'));
  return { storage: new FileStorage(root), close: () => rm(root, { recursive: true, force: true }) };
});

const realS3Url = process.env.SCRIPTORIUM_TEST_S3_URL;
if (realS3Url !== undefined) {
  // Under a fresh prefix, emptied at the end.
  storageContract(`${realS3Url} (a real S3)`, async () => {
    const storage = new S3Storage(realS3Url);
    return {
      storage,
      async close() {
        const keys: string[] = [];
        for await (const { key } of storage.list('', { recursive: true })) keys.push(key);
        await inBatches(keys, 32, (key) => storage.delete(key));
        storage.destroy();
      },
    };
  });
} else if (TEST_SERVICES.source === 'containers') {
  storageContract('s3:// (MinIO in a container)', async () => {
    const minio = await startMinioContainer(['contract']);
    useMinioCredentials();
    return onServer(minio.url, minio.close);
  });
} else {
  storageContract('s3:// (s3rver)', async () => {
    useS3rverCredentials();
    const server = await startS3Server({ buckets: ['contract'] });
    return onServer(server.endpoint, server.close);
  });
}

/** The contract's bucket on the S3 server at `endpoint`; closing it stops the server with `stop`. */
function onServer(endpoint: string, stop: () => Promise<void>): OpenedBackend {
  const storage = new S3Storage('s3://contract/under/a/prefix', { endpoint });
  return {
    storage,
    async close() {
      storage.destroy();
      await stop();
    },
  };
}

function storageContract(backend: string, open: () => Promise<OpenedBackend>): void {
  describe(`${backend} storage`, () => {
    let opened: OpenedBackend;
    let storage: Storage;
    before(async () => {
      opened = await open();
      storage = opened.storage;
    });
    after(() => opened.close());

    test('a small object put as a Buffer gets back byte for byte', async () => {
      await storage.put('small/hello.txt', Buffer.from('hello, storage\n'), { contentType: 'text/plain' });
      assert.equal((await storage.get('small/hello.txt')).toString(), 'hello, storage\n');
    });

    test('a zero-byte object round-trips', async () => {
      await storage.put('small/empty', Buffer.alloc(0));
      assert.equal((await storage.get('small/empty')).length, 0);
    });

    test('a 20 MiB object streamed from a generator gets back with the same sha256', async (t) => {
      const source = pseudoRandomStream(LARGE_BYTES);
      const putMs = await timed(() => storage.put('large/20mib.bin', source.stream));
      let got: Buffer = Buffer.alloc(0);
      const getMs = await timed(async () => {
        got = await storage.get('large/20mib.bin');
      });
      t.diagnostic(`put ${megabytesPerSecond(LARGE_BYTES, putMs)} MB/s, get ${megabytesPerSecond(LARGE_BYTES, getMs)} MB/s`);
      assert.equal(got.length, LARGE_BYTES);
      assert.equal(sha256(got), source.sha256());
    });

    test('the 20 MiB object read with getStream has the same sha256', async (t) => {
      const hash = createHash('sha256');
      let bytes = 0;
      const ms = await timed(async () => {
        for await (const chunk of await storage.getStream('large/20mib.bin')) {
          hash.update(chunk as Buffer);
          bytes += (chunk as Buffer).length;
        }
      });
      t.diagnostic(`getStream ${megabytesPerSecond(LARGE_BYTES, ms)} MB/s`);
      assert.equal(bytes, LARGE_BYTES);
      assert.equal(hash.digest('hex'), sha256(await storage.get('large/20mib.bin')));
    });

    test('a put whose source stream fails rejects with a StorageError and stores nothing', async () => {
      const body = new PassThrough();
      const putting = storage.put('failed/object.bin', body);
      body.write(Buffer.alloc(1024));
      setImmediate(() => body.destroy(new Error('source connection lost')));
      await assert.rejects(putting, { name: 'StorageError', message: /source connection lost/ });
      assert.equal(await storage.exists('failed/object.bin'), false);
    });

    test('stat reports the size of a stored object', async () => {
      await storage.put('stat/seven', Buffer.from('7 bytes'));
      const info = await storage.stat('stat/seven');
      assert.equal(info.key, 'stat/seven');
      assert.equal(info.size, 7);
      assert.ok(info.lastModified instanceof Date);
    });

    test('put replaces an existing object', async () => {
      await storage.put('replace/me', Buffer.from('first'));
      await storage.put('replace/me', Buffer.from('second'));
      assert.equal((await storage.get('replace/me')).toString(), 'second');
    });

    describe('conditional writes', () => {
      const conflict = { name: 'StorageError', code: 'conflict' };

      test('a create where nothing is stores the object; a second create is refused and changes nothing', async () => {
        await storage.putIfUnchanged('conditional/created', Buffer.from('first'), null, { contentType: 'application/json' });
        const read = await storage.getVersioned('conditional/created');
        assert.equal(read.body.toString(), 'first');
        await assert.rejects(storage.putIfUnchanged('conditional/created', Buffer.from('second'), null), conflict);
        assert.deepEqual(await storage.getVersioned('conditional/created'), read);
      });

      test('a replace of the version read succeeds once; a stale version, or a missing object, is refused', async () => {
        await storage.put('conditional/replaced', Buffer.from('one'));
        const one = await storage.getVersioned('conditional/replaced');
        await storage.putIfUnchanged('conditional/replaced', Buffer.from('two'), one.version);
        const two = await storage.getVersioned('conditional/replaced');
        assert.equal(two.body.toString(), 'two');
        assert.notEqual(two.version, one.version);
        await assert.rejects(storage.putIfUnchanged('conditional/replaced', Buffer.from('three'), one.version), conflict);
        assert.equal((await storage.get('conditional/replaced')).toString(), 'two');
        await storage.delete('conditional/replaced');
        await assert.rejects(storage.putIfUnchanged('conditional/replaced', Buffer.from('four'), two.version), conflict);
        assert.equal(await storage.exists('conditional/replaced'), false);
      });

      for (const start of ['nothing', 'an object'] as const) {
        test(`of eight writers racing from ${start}, exactly one writes`, async () => {
          const key = `conditional/race-from-${start.replace(' ', '-')}`;
          if (start === 'an object') await storage.put(key, Buffer.from('before'));
          const expected = start === 'nothing' ? null : (await storage.getVersioned(key)).version;
          const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => storage.putIfUnchanged(key, Buffer.from(`writer ${i}`), expected)));
          const winners = results.flatMap((result, i) => (result.status === 'fulfilled' ? [i] : []));
          assert.equal(winners.length, 1, JSON.stringify(results.map((result) => result.status)));
          for (const result of results) if (result.status === 'rejected') assert.equal((result.reason as { code?: string }).code, 'conflict');
          assert.equal((await storage.get(key)).toString(), `writer ${winners[0]}`);
          assert.deepEqual(await listKeys(storage, key, false), [key], 'no other object left beside it');
        });
      }
    });

    for (const [method, call] of missingKeyCalls()) {
      test(`${method} of a missing key rejects with code not_found`, async () => {
        await assert.rejects(call(storage, 'missing/nothing-here'), { name: 'StorageError', code: 'not_found' });
      });
    }

    test('exists is true after put and false after delete', async () => {
      await storage.put('lifecycle/object', Buffer.from('x'));
      assert.equal(await storage.exists('lifecycle/object'), true);
      await storage.delete('lifecycle/object');
      assert.equal(await storage.exists('lifecycle/object'), false);
    });

    test('deleting a missing key succeeds', async () => {
      await storage.delete('lifecycle/never-stored');
      assert.equal(await storage.exists('lifecycle/never-stored'), false);
    });

    test('puts and deletes racing under one prefix lose no object', async () => {
      // A delete may leave a folder empty (file://, s3rver's files) while another put is creating its object there.
      for (let round = 0; round < 40; round++) {
        await Promise.all(
          Array.from({ length: 8 }, async (_, i) => {
            await storage.put(`racing/${round}/gone-${i}`, Buffer.from('x'));
            await Promise.all([storage.delete(`racing/${round}/gone-${i}`), storage.put(`racing/${round}/kept-${i}`, Buffer.from('y'))]);
          }),
        );
      }
      assert.equal((await listKeys(storage, 'racing/', true)).length, 40 * 8);
    });

    test('a key with spaces and unicode round-trips and lists under its own name', async () => {
      const key = 'unicode/Übersicht der Seiten/страница 1 — 頁.md';
      await storage.put(key, Buffer.from('ü'));
      assert.equal((await storage.get(key)).toString(), 'ü');
      assert.deepEqual(await listKeys(storage, 'unicode/', true), [key]);
    });

    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', 'a/./b', '']) {
      test(`the key ${JSON.stringify(key)} is rejected as permanent by put, get and exists`, async () => {
        const rejected = { name: 'StorageError', code: 'permanent' };
        await assert.rejects(storage.put(key, Buffer.from('x')), rejected);
        await assert.rejects(storage.get(key), rejected);
        await assert.rejects(storage.exists(key), rejected);
      });
    }

    test('a list prefix with a ".." segment is rejected as permanent', async () => {
      await assert.rejects(listKeys(storage, '../', true), { name: 'StorageError', code: 'permanent' });
    });

    describe('listing', () => {
      before(async () => {
        for (const key of ['tree/b.txt', 'tree/a.txt', 'tree/sub/c.txt', 'tree/sub/deeper/d.txt', 'treetop.txt', 'tree2/e.txt']) {
          await storage.put(key, Buffer.from(key));
        }
      });

      test('list without recursive returns the objects directly under the prefix, sorted', async () => {
        assert.deepEqual(await listKeys(storage, 'tree/', false), ['tree/a.txt', 'tree/b.txt']);
      });

      test('list with recursive returns every object under the prefix, sorted', async () => {
        assert.deepEqual(await listKeys(storage, 'tree/', true), [
          'tree/a.txt',
          'tree/b.txt',
          'tree/sub/c.txt',
          'tree/sub/deeper/d.txt',
        ]);
      });

      test('a prefix that ends mid-segment matches every key starting with it', async () => {
        assert.deepEqual(await listKeys(storage, 'tree', false), ['treetop.txt']);
        assert.deepEqual(await listKeys(storage, 'tree', true), [
          'tree/a.txt',
          'tree/b.txt',
          'tree/sub/c.txt',
          'tree/sub/deeper/d.txt',
          'tree2/e.txt',
          'treetop.txt',
        ]);
      });

      test('listed objects carry their sizes', async () => {
        const [first] = await listAll(storage, 'tree/sub/', false);
        assert.deepEqual({ key: first?.key, size: first?.size }, { key: 'tree/sub/c.txt', size: 'tree/sub/c.txt'.length });
      });

      test('list of a prefix with no objects yields nothing', async () => {
        assert.deepEqual(await listKeys(storage, 'no-such-prefix/', true), []);
      });
    });

    describe(`listing ${MANY_KEYS} objects`, () => {
      const expected = Array.from({ length: MANY_KEYS }, (_, i) => `many/${String(i).padStart(5, '0')}`);
      before(async () => {
        await inBatches(expected, 16, (key) => storage.put(key, Buffer.alloc(0)));
        await storage.put('many/zz-sub/deeper', Buffer.alloc(0));
      });

      test(`list without recursive returns all ${MANY_KEYS} objects in order and skips the deeper one`, async () => {
        assert.deepEqual(await listKeys(storage, 'many/', false), expected);
      });

      test(`list with recursive returns all ${MANY_KEYS + 1} objects in order`, async () => {
        assert.deepEqual(await listKeys(storage, 'many/', true), [...expected, 'many/zz-sub/deeper']);
      });
    });
  });
}

function missingKeyCalls(): Array<[string, (storage: Storage, key: string) => Promise<unknown>]> {
  return [
    ['get', (storage, key) => storage.get(key)],
    ['getVersioned', (storage, key) => storage.getVersioned(key)],
    ['getStream', (storage, key) => storage.getStream(key)],
    ['stat', (storage, key) => storage.stat(key)],
  ];
}

/** A stream of `totalBytes` random bytes in odd-sized chunks (so part boundaries fall mid-chunk), hashed as generated. */
function pseudoRandomStream(totalBytes: number): { stream: Readable; sha256(): string } {
  const hash = createHash('sha256');
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let sent = 0; sent < totalBytes; ) {
      const chunk = randomFillSync(Buffer.allocUnsafe(Math.min(65_537, totalBytes - sent)));
      hash.update(chunk);
      sent += chunk.length;
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks()), sha256: () => hash.digest('hex') };
}

async function listAll(storage: Storage, prefix: string, recursive: boolean) {
  const objects = [];
  for await (const object of storage.list(prefix, { recursive })) objects.push(object);
  return objects;
}

async function listKeys(storage: Storage, prefix: string, recursive: boolean): Promise<string[]> {
  return (await listAll(storage, prefix, recursive)).map((object) => object.key);
}

async function inBatches<T>(items: T[], size: number, work: (item: T) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < items.length; start += size) await Promise.all(items.slice(start, start + size).map(work));
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

function megabytesPerSecond(bytes: number, ms: number): string {
  return (bytes / 1e6 / (ms / 1000)).toFixed(1);
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
