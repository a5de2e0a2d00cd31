// Zip and tar inputs: entries become `archive!entry` documents, streamed one at a time; unsafe entries
// and bombs are skipped with their reasons while the good entries are still yielded.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { expandInputs, type ExpandInputsOptions } from '../../src/producer/input-sources.js';
import { tarArchive, zipArchive } from '../support/make-archives.js';

const MIB = 1024 * 1024;

let directory: string;
before(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-archives-'));
});
after(() => rm(directory, { recursive: true, force: true }));

async function writeInput(name: string, content: Buffer): Promise<string> {
  const file = path.join(directory, name);
  await writeFile(file, content);
  return file;
}

/** Every document as 'uri = content' and every skip as 'uri: reason'. */
async function expand(inputs: string[], options: ExpandInputsOptions = {}) {
  const skipped: string[] = [];
  const expansion = expandInputs(inputs, { ...options, onSkip: (uri, reason) => skipped.push(`${uri}: ${reason}`) });
  const documents: string[] = [];
  for await (const document of expansion) documents.push(`${document.uri} = ${(await document.bytes()).toString()}`);
  return { documents, skipped, skippedCount: expansion.skipped };
}

const text = (value: string) => Buffer.from(value);

test('a zip expands to its files as archive!entry documents in archive order, directories left out', async () => {
  const zip = await writeInput('scans.zip', zipArchive([
    { name: 'letters/' },
    { name: 'letters/1901.pdf', data: text('stored pdf'), method: 'store' },
    { name: 'letters/1902.png', data: text('deflated png') },
    { name: 'cover.jpg', data: text('jpeg') },
  ]));
  const { documents, skipped } = await expand([zip]);
  assert.deepEqual(documents, [
    `${zip}!letters/1901.pdf = stored pdf`,
    `${zip}!letters/1902.png = deflated png`,
    `${zip}!cover.jpg = jpeg`,
  ]);
  assert.deepEqual(skipped, []);
});

test('a tar.gz expands to its files, with ./ prefixes dropped from the entry paths', async () => {
  const archive = await writeInput('scans.tgz', await tarArchive([
    { name: 'box', type: 'directory' },
    { name: './box/a.pdf', data: text('a') },
    { name: 'box/b.tiff', data: text('b') },
  ], { gzip: true }));
  assert.deepEqual((await expand([archive])).documents, [`${archive}!box/a.pdf = a`, `${archive}!box/b.tiff = b`]);
});

test('a plain tar expands to its files', async () => {
  const archive = await writeInput('plain.tar', await tarArchive([{ name: 'page.png', data: text('png') }]));
  assert.deepEqual((await expand([archive])).documents, [`${archive}!page.png = png`]);
});

test('archives are recognised by content, not by file name', async () => {
  const zipNamedPdf = await writeInput('really-a-zip.pdf', zipArchive([{ name: 'inner.pdf', data: text('inner') }]));
  const pdfNamedZip = await writeInput('really-a-pdf.zip', text('%PDF-1.7 not an archive'));
  assert.deepEqual((await expand([zipNamedPdf, pdfNamedZip])).documents, [
    `${zipNamedPdf}!inner.pdf = inner`,
    `${pdfNamedZip} = %PDF-1.7 not an archive`,
  ]);
});

test('a gzip file that holds no tar is a document of its own, not an archive', async () => {
  const gz = await writeInput('page.pdf.gz', gzipSync(text('%PDF-1.7 compressed')));
  const { documents } = await expand([gz]);
  assert.equal(documents.length, 1);
  assert.match(documents[0], new RegExp(`^${gz} = `));
});

test('a zip inside a zip is yielded as a document, not expanded', async () => {
  const inner = zipArchive([{ name: 'deep.pdf', data: text('deep') }]);
  const outer = await writeInput('outer.zip', zipArchive([{ name: 'inner.zip', data: inner }]));
  const expansion = expandInputs([outer]);
  const uris: string[] = [];
  for await (const document of expansion) {
    uris.push(document.uri);
    assert.deepEqual(await document.bytes(), inner);
  }
  assert.deepEqual(uris, [`${outer}!inner.zip`]);
});

test('zip entries that climb out, are absolute or start with a drive letter are skipped; the good entries are still yielded', async () => {
  const zip = await writeInput('traversal.zip', zipArchive([
    { name: '../evil.pdf', data: text('evil') },
    { name: 'ok/../../evil.pdf', data: text('evil') },
    { name: 'good.pdf', data: text('good') },
    { name: '/abs.png', data: text('evil') },
    { name: 'C:\\Windows\\evil.png', data: text('evil') },
    { name: '..\\evil.png', data: text('evil') },
  ]));
  const { documents, skipped, skippedCount } = await expand([zip]);
  assert.deepEqual(documents, [`${zip}!good.pdf = good`]);
  assert.deepEqual(skipped, [
    `${zip}!../evil.pdf: unsafe entry name: it has a '..' segment (path traversal)`,
    `${zip}!ok/../../evil.pdf: unsafe entry name: it has a '..' segment (path traversal)`,
    `${zip}!/abs.png: unsafe entry name: it is an absolute path`,
    `${zip}!C:/Windows/evil.png: unsafe entry name: it starts with a drive letter`,
    `${zip}!../evil.png: unsafe entry name: it has a '..' segment (path traversal)`,
  ]);
  assert.equal(skippedCount, 5);
});

test('a zip entry that is a symbolic link is skipped', async () => {
  const zip = await writeInput('symlink.zip', zipArchive([
    { name: 'passwd.pdf', data: text('/etc/passwd'), unixMode: 0o120777 },
    { name: 'good.pdf', data: text('good') },
  ]));
  const { documents, skipped } = await expand([zip]);
  assert.deepEqual(documents, [`${zip}!good.pdf = good`]);
  assert.deepEqual(skipped, [`${zip}!passwd.pdf: it is a symbolic link, not a regular file`]);
});

test('a zip entry compressed beyond 200:1 is skipped as a bomb', async () => {
  const zip = await writeInput('ratio-bomb.zip', zipArchive([
    { name: 'bomb.pdf', data: Buffer.alloc(2 * MIB) },
    { name: 'good.pdf', data: text('good') },
  ]));
  const { documents, skipped } = await expand([zip]);
  assert.deepEqual(documents, [`${zip}!good.pdf = good`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /!bomb\.pdf: its compression ratio \d+:1 is over the limit of 200:1 \(archiveLimits\.maxCompressionRatio\)/);
});

test('a zip entry whose data is longer than its declared size is skipped when reading passes that size', async () => {
  const zip = await writeInput('lying-bomb.zip', zipArchive([
    { name: 'liar.pdf', data: Buffer.alloc(64 * 1024, 1), declaredSize: 100 },
    { name: 'good.pdf', data: text('good') },
  ]));
  const { documents, skipped } = await expand([zip]);
  assert.deepEqual(documents, [`${zip}!good.pdf = good`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /!liar\.pdf: cannot read it .*too many bytes in the stream\. expected 100/);
});

test('an entry larger than maxEntryBytes is skipped', async () => {
  const zip = await writeInput('large-entry.zip', zipArchive([
    { name: 'large.pdf', data: Buffer.alloc(2000, 1) },
    { name: 'small.pdf', data: text('small') },
  ]));
  const { documents, skipped } = await expand([zip], { archiveLimits: { maxEntryBytes: 1000 } });
  assert.deepEqual(documents, [`${zip}!small.pdf = small`]);
  assert.deepEqual(skipped, [`${zip}!large.pdf: its uncompressed size 2000 bytes is over the limit of 1000 (archiveLimits.maxEntryBytes)`]);
});

test('a tar.gz stops at maxArchiveBytes: the entry that would pass it and the rest are not read', async () => {
  const archive = await writeInput('gzip-bomb.tgz', await tarArchive([
    { name: 'first.pdf', data: Buffer.alloc(10_000) },
    { name: 'second.pdf', data: Buffer.alloc(100_000) },
    { name: 'third.pdf', data: text('never read') },
  ], { gzip: true }));
  const { documents, skipped } = await expand([archive], { archiveLimits: { maxArchiveBytes: 64 * 1024 } });
  assert.deepEqual(documents.map((document) => document.split(' = ')[0]), [`${archive}!first.pdf`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /gzip-bomb\.tgz: reading second\.pdf would bring the archive to 110000 uncompressed bytes, over the limit of 65536/);
});

test('a tar.gz padded with zero blocks after its end stops at maxArchiveBytes', async () => {
  const tarball = await tarArchive([{ name: 'first.pdf', data: text('first') }]);
  const archive = await writeInput('padded-bomb.tgz', gzipSync(Buffer.concat([tarball, Buffer.alloc(4 * MIB)])));
  const { documents, skipped } = await expand([archive], { archiveLimits: { maxArchiveBytes: MIB } });
  assert.deepEqual(documents, [`${archive}!first.pdf = first`]);
  assert.deepEqual(skipped, [
    `${archive}: stopped reading it: it decompresses to more than ${MIB} bytes (archiveLimits.maxArchiveBytes); ` +
      'split the archive or raise the limit; any later entries were not read',
  ]);
});

test('an archive stops after maxEntries entries', async () => {
  const zip = await writeInput('many.zip', zipArchive(['1.pdf', '2.pdf', '3.pdf'].map((name) => ({ name, data: text(name) }))));
  const { documents, skipped } = await expand([zip], { archiveLimits: { maxEntries: 2 } });
  assert.deepEqual(documents, [`${zip}!1.pdf = 1.pdf`, `${zip}!2.pdf = 2.pdf`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /many\.zip: the archive has more than 2 entries \(archiveLimits\.maxEntries\)/);
});

test('tar links, devices and climbing entries are skipped; the good entries are still yielded', async () => {
  const archive = await writeInput('links.tar.gz', await tarArchive([
    { name: 'passwd.pdf', type: 'symlink', linkname: '/etc/passwd' },
    { name: 'hard.pdf', type: 'link', linkname: 'good.pdf' },
    { name: 'null.pdf', type: 'character-device' },
    { name: '../../evil.pdf', data: text('evil') },
    { name: 'good.pdf', data: text('good') },
  ], { gzip: true }));
  const { documents, skipped } = await expand([archive]);
  assert.deepEqual(documents, [`${archive}!good.pdf = good`]);
  assert.deepEqual(skipped, [
    `${archive}!passwd.pdf: it is a symbolic link (to /etc/passwd), not a regular file`,
    `${archive}!hard.pdf: it is a hard link (to good.pdf), not a regular file`,
    `${archive}!null.pdf: it is a character-device, not a regular file`,
    `${archive}!../../evil.pdf: unsafe entry name: it has a '..' segment (path traversal)`,
  ]);
});

test('a damaged archive is skipped with its reason and the next input still expands', async () => {
  const truncatedZip = await writeInput('truncated.zip', zipArchive([{ name: 'a.pdf', data: text('a') }]).subarray(0, 40));
  const good = await writeInput('after.pdf', text('%PDF-1.7'));
  const { documents, skipped } = await expand([truncatedZip, good]);
  assert.deepEqual(documents, [`${good} = %PDF-1.7`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /truncated\.zip: cannot read the zip archive: End of central directory record signature not found/);
});

test('a truncated tar.gz is reported as damaged after the entries before the damage are yielded', async () => {
  const whole = await tarArchive([
    { name: 'first.pdf', data: text('first') },
    { name: 'second.pdf', data: Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919) % 251)) },
  ], { gzip: true });
  const archive = await writeInput('truncated.tgz', whole.subarray(0, whole.length - 200));
  const { documents, skipped } = await expand([archive]);
  assert.deepEqual(documents, [`${archive}!first.pdf = first`]);
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /truncated\.tgz: stopped reading it: the tar archive is damaged or truncated: unexpected end of file/);
});
