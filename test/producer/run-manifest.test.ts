// Run manifests: each enqueue or run records its inputs' uris, docIds and result keys, and
// `scriptorium results INPUT` finds a document by the input it was read from (the newest manifest wins).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { documentResultKeys, pageResultsFolder } from '../../src/jobs/storage-layout.js';
import type { EnqueueSummary, QueuedDocument } from '../../src/producer/enqueue.js';
import { docIdOfInput, writeRunManifest } from '../../src/producer/run-manifest.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { MAIN } from '../support/worker-processes.js';

const OLD = '01'.repeat(16);
const NEW = '02'.repeat(16);
let dir: string;
let storage: FileStorage;

function summaryOf(uri: string, docId: string): EnqueueSummary {
  const queued = { state: 'enqueued', uri, docId, pages: 1, keys: { source: `staging/${docId}/source.pdf`, results: `results/${docId}/` } } as QueuedDocument;
  return { documents: 1, pages: 1, skippedDone: 0, alreadyQueued: 0, rejected: [{ state: 'rejected', uri: '/in/notes.txt', reason: 'not a document' }], queued: [queued] };
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-manifest-'));
  storage = new FileStorage(dir);
});
after(() => rm(dir, { recursive: true, force: true }));

test('a manifest lists each input with its docId and result keys, and the rejected inputs with their reasons', async () => {
  const key = await writeRunManifest(summaryOf('/in/a.pdf', OLD), storage, new Date('2026-12-03T09:00:00Z'));
  assert.match(key, /^manifests\/20261203T090000Z-[0-9a-f]{8}\.json$/);
  const manifest = JSON.parse((await storage.get(key)).toString());
  assert.deepEqual(manifest.documents, [
    { uri: '/in/a.pdf', docId: OLD, state: 'enqueued', pages: 1, results: { ...documentResultKeys(OLD), pages: pageResultsFolder(OLD) } },
  ]);
  assert.deepEqual(manifest.rejected, [{ uri: '/in/notes.txt', reason: 'not a document' }]);
});

test('the newest manifest naming an input gives its docId; an input no manifest names has none', async () => {
  await writeRunManifest(summaryOf('/in/a.pdf', NEW), storage, new Date('2026-12-03T10:00:00Z'));
  assert.equal(await docIdOfInput('/in/a.pdf', storage), NEW);
  assert.equal(await docIdOfInput('/in/b.pdf', storage), undefined);
});

test('scriptorium results INPUT prints the results of the document read from that input', async () => {
  const input = path.join(dir, 'scan.pdf');
  await writeRunManifest(summaryOf(input, NEW), storage, new Date('2026-12-03T11:00:00Z'));
  await storage.put(documentResultKeys(NEW).markdown, Buffer.from('# The scan\n'));
  await storage.put(documentResultKeys(NEW).done, Buffer.from('{}'));
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'results', input, '--storage', dir]);
  assert.equal(stdout, '# The scan\n');
});
