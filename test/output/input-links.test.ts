// Results found by input name: the link names made from inputs, and the links file storage gets.
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { inputLinkName, linkResultsByInput } from '../../src/output/input-links.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { S3Storage } from '../../src/storage/s3-storage.js';

const DOC_A = 'a'.repeat(32);
const DOC_B = 'b'.repeat(32);

describe('inputLinkName', () => {
  test('a file in a folder argument: the folder’s name, then its path below it', () => {
    assert.equal(inputLinkName('/home/me/samples/a/b.pdf', ['samples'], '/home/me'), 'samples/a/b.pdf');
    assert.equal(inputLinkName('/home/me/samples/b.pdf', ['./samples/'], '/home/me'), 'samples/b.pdf');
    assert.equal(inputLinkName('/data/in/b.pdf', ['/data/in'], '/home/me'), 'in/b.pdf');
  });

  test('a file argument: its own name', () => {
    assert.equal(inputLinkName('/data/in/scan.png', ['/data/in/scan.png'], '/'), 'scan.png');
    assert.equal(inputLinkName('/home/me/scan.png', ['other.pdf', 'scan.png'], '/home/me'), 'scan.png');
  });

  test('an archive entry: below the archive’s name, inside a folder argument or named itself', () => {
    assert.equal(inputLinkName('/data/scans.zip!2026/p.tiff', ['/data/scans.zip'], '/'), 'scans.zip/2026/p.tiff');
    assert.equal(inputLinkName('/data/in/scans.tar!p.pdf', ['/data/in'], '/'), 'in/scans.tar/p.pdf');
  });

  test('an S3 object: below the last segment of the prefix argument', () => {
    assert.equal(inputLinkName('s3://bucket/inbox/x.pdf', ['s3://bucket/inbox/'], '/'), 'inbox/x.pdf');
    assert.equal(inputLinkName('s3://bucket/x.pdf', ['s3://bucket'], '/'), 'bucket/x.pdf');
    assert.equal(inputLinkName('s3://bucket/inbox/x.pdf', ['s3://bucket/inbox/x.pdf'], '/'), 'x.pdf');
  });

  test('a name only starting like an argument is not below it: the uri less its scheme and root', () => {
    assert.equal(inputLinkName('s3://in/scans-2024/a.pdf', ['s3://in/scans'], '/'), 'in/scans-2024/a.pdf');
    assert.equal(inputLinkName('/data/inbox/a.pdf', ['/data/in'], '/'), 'data/inbox/a.pdf');
  });

  test('no segment of a name can climb out of by-input/', () => {
    assert.equal(inputLinkName('/x/../y/./a.pdf', [], '/'), 'x/y/a.pdf');
    assert.equal(inputLinkName('/x/a\\b.pdf', ['/x'], '/'), 'x/a_b.pdf');
  });
});

describe('linkResultsByInput', () => {
  let root: string;
  let storage: FileStorage;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-input-links-'));
    storage = new FileStorage(root);
    for (const docId of [DOC_A, DOC_B]) {
      await mkdir(path.join(root, 'results', docId), { recursive: true });
      await writeFile(path.join(root, 'results', docId, 'document.md'), `# ${docId}\n`);
    }
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('links by-input/<name> to the document’s results folder with a relative link', async () => {
    const link = await linkResultsByInput(storage, 'samples/sample.pdf', DOC_A);
    assert.equal(link, path.join(root, 'by-input', 'samples', 'sample.pdf'));
    assert.ok((await lstat(link)).isSymbolicLink());
    assert.equal(await readlink(link), path.join('..', '..', 'results', DOC_A));
    assert.equal(await readFile(path.join(link, 'document.md'), 'utf8'), `# ${DOC_A}\n`);
  });

  test('a later document of the same name replaces the link', async () => {
    await linkResultsByInput(storage, 'again.pdf', DOC_A);
    const link = await linkResultsByInput(storage, 'again.pdf', DOC_B);
    assert.equal(await readFile(path.join(link!, 'document.md'), 'utf8'), `# ${DOC_B}\n`);
  });

  test('a name taken by a folder is refused, and the folder is left as it was', async () => {
    await mkdir(path.join(root, 'by-input', 'taken.pdf', 'inside'), { recursive: true });
    await assert.rejects(linkResultsByInput(storage, 'taken.pdf', DOC_A));
    assert.ok((await lstat(path.join(root, 'by-input', 'taken.pdf', 'inside'))).isDirectory());
  });

  test('the links are not objects of the storage', async () => {
    await linkResultsByInput(storage, 'listed.pdf', DOC_A);
    const keys = [];
    for await (const object of storage.list('by-input/')) keys.push(object.key);
    assert.deepEqual(keys, []);
  });

  test('S3 storage gets no links', async () => {
    assert.equal(await linkResultsByInput(new S3Storage('s3://bucket/prefix'), 'a.pdf', DOC_A), undefined);
  });
});
