// Keys and URLs: joinKey builds keys that cannot escape the storage root; one parser reads s3:// URLs;
// openStorage picks the backend from the URL scheme and explains what it accepts; key helpers load no SDK.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { openStorage } from '../../src/storage/open-storage.js';
import { isS3Url, parseS3Url } from '../../src/storage/s3-url.js';
import { checkKey, joinKey } from '../../src/storage/storage-key.js';

test('joinKey joins parts with "/", parts may contain "/"', () => {
  assert.equal(joinKey('results', 'doc-1', 'pages/0001.md'), 'results/doc-1/pages/0001.md');
});

test('joinKey rejects a ".." part as permanent, naming the rule', () => {
  assert.throws(() => joinKey('results', '..', 'secrets'), {
    name: 'StorageError',
    code: 'permanent',
    message: /^invalid storage key "results\/\.\.\/secrets": it has a '\.\.' segment; keys are relative/,
  });
});

test('joinKey rejects an absolute first part', () => {
  assert.throws(() => joinKey('/etc', 'passwd'), { code: 'permanent', message: /it is absolute/ });
});

test('joinKey rejects an empty part', () => {
  assert.throws(() => joinKey('results', '', 'x'), { code: 'permanent', message: /it has an empty segment/ });
});

test('checkKey rejects backslashes', () => {
  assert.throws(() => checkKey('a\\..\\b'), { code: 'permanent', message: /backslash/ });
});

test('checkKey rejects keys longer than 1024 UTF-8 bytes', () => {
  assert.throws(() => checkKey('é'.repeat(513)), { code: 'permanent', message: /longer than 1024 UTF-8 bytes/ });
});

test('checkKey accepts spaces, unicode and dots inside names', () => {
  assert.equal(checkKey('a b/ünï.côdé/..hidden/x.'), 'a b/ünï.côdé/..hidden/x.');
});

test('a file:// URL opens file storage at that directory', () => {
  assert.equal(openStorage('file:///var/lib/scriptorium/data').url, 'file:///var/lib/scriptorium/data');
});

test('a plain relative path opens file storage below the working directory', () => {
  assert.equal(openStorage('out/store').url, pathToFileURL(path.resolve('out/store')).href);
});

test('an s3:// URL opens S3 storage; a trailing "/" on the prefix is dropped', () => {
  assert.equal(openStorage('s3://bucket/some/prefix/', { s3: { region: 'eu-west-1' } }).url, 's3://bucket/some/prefix');
});

test('an s3:// URL without a bucket is rejected with the expected form', () => {
  assert.throws(() => openStorage('s3:///prefix'), { code: 'permanent', message: /write it as s3:\/\/bucket or s3:\/\/bucket\/prefix/ });
});

test('an s3:// prefix with an empty segment is rejected', () => {
  assert.throws(() => openStorage('s3://bucket/a//b'), { code: 'permanent', message: /empty segment/ });
});

test('an unsupported scheme is rejected, listing the supported ones', () => {
  assert.throws(() => openStorage('gs://bucket/x'), {
    name: 'StorageError',
    code: 'permanent',
    message: "unsupported storage URL scheme 'gs:' in gs://bucket/x: use file:///absolute/dir, a directory path, or s3://bucket/prefix",
  });
});

test('a file:// URL with a remote host is rejected', () => {
  assert.throws(() => openStorage('file://fileserver/share'), { code: 'permanent', message: /^invalid file URL file:\/\/fileserver\/share/ });
});

test('an s3:// URL is read into its bucket and the path after it, as written', () => {
  assert.deepEqual(parseS3Url('s3://inbox'), { bucket: 'inbox', path: '' });
  assert.deepEqual(parseS3Url('s3://inbox/'), { bucket: 'inbox', path: '' });
  assert.deepEqual(parseS3Url('S3://inbox/scans/2024/'), { bucket: 'inbox', path: 'scans/2024/' });
  assert.deepEqual(parseS3Url('s3://inbox/a b/c.pdf'), { bucket: 'inbox', path: 'a b/c.pdf' });
});

test('an s3:// URL whose bucket is no bucket name is rejected with the expected form', () => {
  for (const url of ['s3://', 's3:///key', 's3://ab/key', 's3://-bucket/key']) {
    assert.throws(() => parseS3Url(url), { name: 'StorageError', code: 'permanent', message: /write it as s3:\/\/bucket or s3:\/\/bucket\/prefix/ }, url);
  }
  assert.equal(isS3Url('S3://inbox/a.pdf'), true);
  assert.equal(isS3Url('/data/s3://inbox'), false);
});

/** Every package a compiled module loads, following its relative imports (import lines of tsc's output). */
async function packagesLoadedBy(modulePath: string): Promise<Set<string>> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const pending = [fileURLToPath(new URL(`../../src/${modulePath}`, import.meta.url))];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const [, specifier] of (await readFile(file, 'utf8')).matchAll(/^\s*(?:import|export)\b[^'"]*?['"]([^'"]+)['"]/gm)) {
      if (specifier.startsWith('.')) pending.push(path.resolve(path.dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier);
    }
  }
  return packages;
}

test('the storage layout, key helpers, the s3:// parser and the Storage interface load no AWS SDK', async () => {
  for (const module of ['jobs/storage-layout.js', 'storage/storage-key.js', 'storage/s3-url.js', 'storage/storage.js', 'watch/pipeline-output.js']) {
    const sdk = [...(await packagesLoadedBy(module))].filter((name) => name.startsWith('@aws-sdk/'));
    assert.deepEqual(sdk, [], module);
  }
  // The factory does load it: the walk above sees through imports.
  assert.ok((await packagesLoadedBy('storage/open-storage.js')).has('@aws-sdk/client-s3'));
});
