// Files, directories, s3:// prefixes and exact S3 objects as producer inputs (archives: archives.test.ts).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freePort } from '../../src/queue/embedded-redis.js';
import { expandInputs, type ExpandInputsOptions, type ProducerInput } from '../../src/producer/input-sources.js';
import { S3Storage } from '../../src/storage/s3-storage.js';
import { zipArchive } from '../support/make-archives.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';

let directory: string;
before(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-inputs-'));
});
after(() => rm(directory, { recursive: true, force: true }));

/** Writes each relative path with its own name as content; returns the absolute root. */
async function makeTree(name: string, files: string[]): Promise<string> {
  const root = path.join(directory, name);
  for (const file of files) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), file);
  }
  return root;
}

async function expand(inputs: ProducerInput[], options: ExpandInputsOptions = {}) {
  const skipped: string[] = [];
  const documents: string[] = [];
  for await (const document of expandInputs(inputs, { ...options, onSkip: (uri, reason) => skipped.push(`${uri}: ${reason}`) })) {
    documents.push(`${document.uri} = ${(await document.bytes()).toString()} (${document.size})`);
  }
  return { documents, skipped };
}

test('a directory expands recursively to its files in the lexical order of their relative paths', async () => {
  const root = await makeTree('sorted', ['b.pdf', 'a0.pdf', 'a/z.png', 'a/b/c.tiff', 'a.pdf', 'A.pdf']);
  const { documents } = await expand([root]);
  assert.deepEqual(
    documents.map((document) => path.relative(root, document.split(' = ')[0])),
    ['A.pdf', 'a.pdf', 'a/b/c.tiff', 'a/z.png', 'a0.pdf', 'b.pdf'],
  );
});

test('a file document has its absolute path as uri, its size, and its bytes read on demand', async () => {
  const root = await makeTree('single', ['page.png']);
  const relative = path.relative(process.cwd(), path.join(root, 'page.png'));
  assert.deepEqual((await expand([relative])).documents, [`${path.join(root, 'page.png')} = page.png (8)`]);
});

test('inputs expand in the order given', async () => {
  const first = await makeTree('first', ['z.pdf']);
  const second = await makeTree('second', ['a.pdf']);
  const { documents } = await expand([first, second]);
  assert.deepEqual(documents, [`${first}/z.pdf = z.pdf (5)`, `${second}/a.pdf = a.pdf (5)`]);
});

test('symbolic links inside a directory are skipped with their targets, not followed', async () => {
  const outside = await makeTree('outside', ['secret.pdf']);
  const root = await makeTree('with-links', ['real.pdf']);
  await symlink(path.join(outside, 'secret.pdf'), path.join(root, 'escape.pdf'));
  await symlink(outside, path.join(root, 'escape-dir'));
  const { documents, skipped } = await expand([root]);
  assert.deepEqual(documents, [`${root}/real.pdf = real.pdf (8)`]);
  assert.deepEqual(skipped, [
    `${root}/escape-dir: symbolic link to ${outside} not followed; pass its target as an input of its own`,
    `${root}/escape.pdf: symbolic link to ${outside}/secret.pdf not followed; pass its target as an input of its own`,
  ]);
});

test('a symbolic link given as an input is followed', async () => {
  const target = await makeTree('link-target', ['doc.pdf']);
  const link = path.join(directory, 'named-link');
  await symlink(target, link);
  assert.deepEqual((await expand([link])).documents, [`${link}/doc.pdf = doc.pdf (7)`]);
});

test('a missing input is skipped with its reason and the next input still expands', async () => {
  const missing = path.join(directory, 'no-such-file.pdf');
  const root = await makeTree('present', ['here.pdf']);
  const expansion = expandInputs([missing, root]);
  const uris: string[] = [];
  for await (const document of expansion) uris.push(document.uri);
  assert.deepEqual(uris, [`${root}/here.pdf`]);
  assert.equal(expansion.skipped, 1);
});

describe('an S3 endpoint that does not answer', () => {
  let s3: ExpandInputsOptions['s3'];
  before(async () => {
    useS3rverCredentials();
    // A port nobody listens on: every request is refused at once; one try, no retry wait.
    s3 = { endpoint: `http://127.0.0.1:${await freePort()}`, maxAttempts: 1 };
  });

  test('its inputs are rejected with the reason and the other inputs still expand', async () => {
    const root = await makeTree('beside-unreachable', ['here.pdf']);
    const { documents, skipped } = await expand(['s3://inbox/scans/', { kind: 's3-object', url: 's3://inbox/a.pdf' }, root], { s3 });
    assert.deepEqual(documents, [`${root}/here.pdf = here.pdf (8)`]);
    assert.equal(skipped.length, 2, skipped.join('\n'));
    assert.match(skipped[0], /^s3:\/\/inbox\/scans\/: cannot read it: .*unreachable/);
    assert.match(skipped[1], /^s3:\/\/inbox\/a\.pdf: cannot read it: .*unreachable/);
  });

  test("with whenUnreachable 'throw' the failure rejects, for a caller that is handed the input again", async () => {
    await assert.rejects(expand([{ kind: 's3-object', url: 's3://inbox/a.pdf' }], { s3, whenUnreachable: 'throw' }), { name: 'StorageError', code: 'transient' });
  });
});

describe('s3:// inputs (s3rver)', () => {
  let server: S3Server;
  let storage: S3Storage;
  let s3: ExpandInputsOptions['s3'];
  before(async () => {
    useS3rverCredentials();
    server = await startS3Server({ buckets: ['inbox'] });
    s3 = { endpoint: server.endpoint };
    storage = new S3Storage('s3://inbox', s3);
    for (const key of ['scans/2024/b.pdf', 'scans/2024/a.pdf', 'scans/cover.png', 'scans-old/x.pdf', 'other/y.pdf']) {
      await storage.put(key, Buffer.from(key));
    }
  });
  after(async () => {
    storage.destroy();
    await server.close();
  });

  test('s3://bucket/prefix/ expands to every object below the prefix, in key order, with its bytes', async () => {
    assert.deepEqual((await expand(['s3://inbox/scans/'], { s3 })).documents, [
      's3://inbox/scans/2024/a.pdf = scans/2024/a.pdf (16)',
      's3://inbox/scans/2024/b.pdf = scans/2024/b.pdf (16)',
      's3://inbox/scans/cover.png = scans/cover.png (15)',
    ]);
  });

  test('a prefix without a trailing slash is an S3 prefix: it also matches sibling keys', async () => {
    const { documents } = await expand(['s3://inbox/scans'], { s3 });
    // Sorted here: s3rver lists 'scans/…' before 'scans-old/…', where S3 lists in UTF-8 byte order.
    assert.deepEqual(
      documents.map((document) => document.split(' = ')[0]).sort(),
      ['s3://inbox/scans-old/x.pdf', 's3://inbox/scans/2024/a.pdf', 's3://inbox/scans/2024/b.pdf', 's3://inbox/scans/cover.png'],
    );
  });

  test('a bucket that does not exist is skipped with its reason', async () => {
    const { documents, skipped } = await expand(['s3://no-such-bucket/scans/'], { s3 });
    assert.deepEqual(documents, []);
    assert.equal(skipped.length, 1);
    assert.match(skipped[0], /^s3:\/\/no-such-bucket\/scans\/: cannot list it: /);
  });

  const object = (url: string): ProducerInput => ({ kind: 's3-object', url });

  test('an exact object is that object alone, not the keys it begins', async () => {
    for (const key of ['exact/scan.pdf', 'exact/scan.pdf.bak', 'exact/scan.pdf/page.png']) await storage.put(key, Buffer.from(key));
    assert.deepEqual(await expand([object('s3://inbox/exact/scan.pdf')], { s3 }), {
      documents: ['s3://inbox/exact/scan.pdf = exact/scan.pdf (14)'],
      skipped: [],
    });
  });

  test('a missing exact object is skipped as not found, never replaced by a key it begins; the next input still expands', async () => {
    await storage.put('missing/gone.pdf.bak', Buffer.from('backup'));
    await storage.put('missing/here.pdf', Buffer.from('here'));
    const expansion = await expand([object('s3://inbox/missing/gone.pdf'), object('s3://inbox/missing/here.pdf')], { s3 });
    assert.deepEqual(expansion, {
      documents: ['s3://inbox/missing/here.pdf = here (4)'],
      skipped: ['s3://inbox/missing/gone.pdf: object not found: s3://inbox/missing/gone.pdf'],
    });
  });

  test('an exact object in a bucket that does not exist is not found', async () => {
    assert.deepEqual(await expand([object('s3://no-such-bucket/scan.pdf')], { s3 }), {
      documents: [],
      skipped: ['s3://no-such-bucket/scan.pdf: object not found: s3://no-such-bucket/scan.pdf'],
    });
  });

  test('an exact object needs a key', async () => {
    const { documents, skipped } = await expand([object('s3://inbox'), object('s3://inbox/')], { s3 });
    assert.deepEqual(documents, []);
    assert.deepEqual(skipped, ['s3://inbox: not an S3 object: write it as s3://bucket/key', 's3://inbox/: not an S3 object: write it as s3://bucket/key']);
  });

  test('an exact object that is an archive is read as its listing reads it: one document, not expanded', async () => {
    const zip = zipArchive([{ name: 'inner.pdf', data: Buffer.from('inner') }]);
    await storage.put('archives/scans.zip', zip);
    const listed = await expand(['s3://inbox/archives/'], { s3 });
    const named = await expand([object('s3://inbox/archives/scans.zip')], { s3 });
    assert.deepEqual(named, listed);
    assert.deepEqual(named.documents, [`s3://inbox/archives/scans.zip = ${zip.toString()} (${zip.length})`]);
  });
});
