// Keys and URLs: joinKey builds keys that cannot escape the storage root; openStorage picks the
// backend from the URL scheme and explains what it accepts.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { checkKey, joinKey, openStorage } from '../src/storage/storage.js';

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
