// planDocument: from an input document to its docId, keys and jobs, or a rejection with a reason;
// stageSource: the source and its document job uploaded once.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { openSealedPdfPassword } from '../../src/documents/document.js';
import { parseDocumentJobData, type OcrJobOptions } from '../../src/jobs/job-types.js';
import { stagedJobKey } from '../../src/jobs/storage-layout.js';
import { documentId } from '../../src/producer/doc-id.js';
import type { InputDocument } from '../../src/producer/input-sources.js';
import { planDocument, stageSource, type PlannedDocument, type RejectedDocument } from '../../src/producer/plan-document.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { zipArchive } from '../support/make-archives.js';
import { A4, LETTER, makeCorruptPdf, makeEncryptedPdf, makePdf, makeText, makeTruncatedPdf } from '../support/make-documents.js';

const V2: OcrJobOptions = { variant: 'v2', task: 'markdown', mode: 'gundam', dpi: 144 };
const V3_MULTI: OcrJobOptions = { variant: 'v3', task: 'parse-multi', mode: 'base', dpi: 144 };

let root: string;
let storage: FileStorage;
let threePages: Buffer;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-plan-'));
  storage = new FileStorage(root);
  threePages = await makePdf([LETTER, A4, LETTER], 2);
});
after(() => rm(root, { recursive: true, force: true }));

class PutCountingStorage extends FileStorage {
  readonly puts: string[] = [];

  override put(key: string, body: Buffer): Promise<void> {
    this.puts.push(key);
    return super.put(key, body);
  }
}

function input(uri: string, bytes: Buffer): InputDocument {
  return { uri, size: bytes.length, bytes: async () => bytes };
}

async function planned(bytes: Buffer, options: OcrJobOptions, deps: { storage: Storage } = { storage }): Promise<PlannedDocument> {
  const plan = await planDocument(input('/in/doc.pdf', bytes), options, deps);
  assert.equal(plan.status, 'planned', `rejected: ${(plan as RejectedDocument).reason}`);
  return plan as PlannedDocument;
}

async function rejected(bytes: Buffer): Promise<RejectedDocument> {
  const plan = await planDocument(input('/in/bad', bytes), V2, { storage });
  assert.equal(plan.status, 'rejected');
  return plan as RejectedDocument;
}

test('a 3-page PDF is planned as a document job and one page job per page', async () => {
  const plan = await planned(threePages, V2);
  const docId = documentId(threePages, V2);
  const keys = { source: `staging/${docId}/source.pdf`, results: `results/${docId}/` };
  assert.equal(plan.docId, docId);
  assert.deepEqual(plan.keys, keys);
  const { enqueuedAt } = plan.documentJob;
  assert.deepEqual(plan.documentJob, { docId, sourceUri: '/in/doc.pdf', storage: storage.url, type: 'pdf', pageCount: 3, keys, options: V2, enqueuedAt });
  assert.deepEqual(
    plan.pageJobs.map((job) => [job.firstPage, job.lastPage]),
    [[1, 1], [2, 2], [3, 3]],
  );
  assert.deepEqual(plan.pageJobs[1], { docId, sourceUri: '/in/doc.pdf', storage: storage.url, type: 'pdf', firstPage: 2, lastPage: 2, keys, options: V2, enqueuedAt });
  assert.equal(plan.alreadyDone, false);
});

test('a truncated PDF whose first pages can be read is planned with all its pages, the damage noted; not rejected', async () => {
  const plan = await planned(await makeTruncatedPdf(0.6), V2);
  assert.equal(plan.documentJob.pageCount, 4);
  assert.match(plan.documentJob.damage ?? '', /^damaged PDF: .* 2 of 4 pages can be read$/);
  assert.equal(plan.pageJobs.length, 4);
});

test('a truncated PDF with no page left is rejected as damaged', async () => {
  assert.match((await rejected(await makeTruncatedPdf(0.3))).reason, /^damaged PDF: .* none of its 4 pages can be read$/);
});

test('a corrupt PDF is rejected with the reason it cannot be opened', async () => {
  const plan = await rejected(makeCorruptPdf());
  assert.equal(plan.uri, '/in/bad');
  assert.match(plan.reason, /^corrupt PDF: /);
});

test('an encrypted PDF with its password is planned, and its page jobs carry the password sealed to its bytes', async () => {
  const locked = makeEncryptedPdf('s3cret');
  const plan = await planDocument(input('/in/locked.pdf', locked), V2, { storage }, 's3cret');
  assert.equal(plan.status, 'planned', JSON.stringify(plan));
  const { pageJobs, documentJob } = plan as PlannedDocument;
  assert.equal(pageJobs.length, 1);
  const sealed = pageJobs[0].pdfPassword;
  assert.ok(sealed !== undefined, 'the page job has no password');
  assert.equal(openSealedPdfPassword(sealed, locked), 's3cret');
  assert.ok(!JSON.stringify({ documentJob, pageJobs }).includes('s3cret'), 'the job data holds the password in clear');
});

test('an encrypted PDF with a wrong password is rejected: the password is incorrect', async () => {
  const plan = await planDocument(input('/in/locked.pdf', makeEncryptedPdf('s3cret')), V2, { storage }, 'guess');
  assert.deepEqual(plan, { status: 'rejected', uri: '/in/locked.pdf', reason: 'encrypted PDF: the password is incorrect (check --password-env NAME or --password P)' });
});

test('an encrypted PDF without a password is rejected: a password is required', async () => {
  assert.equal((await rejected(makeEncryptedPdf('s3cret'))).reason, 'encrypted PDF: a password is required (give it with --password-env NAME or --password P)');
});

test('documents that open without the password carry none, though one was given', async () => {
  const plan = await planDocument(input('/in/doc.pdf', threePages), V2, { storage }, 's3cret');
  assert.equal(plan.status, 'planned');
  assert.ok((plan as PlannedDocument).pageJobs.every((job) => !('pdfPassword' in job)));
});

test('a text file is rejected as unsupported content', async () => {
  assert.match((await rejected(makeText())).reason, /^text\/plain content is not a supported document/);
});

test('an archive inside an archive reaches planning as a document and is rejected as zip content', async () => {
  const nested = zipArchive([{ name: 'deep.pdf', data: threePages }]);
  assert.match((await rejected(nested)).reason, /^application\/zip content is not a supported document/);
});

test('a document that cannot be read is rejected with the cause', async () => {
  const missing = path.join(root, 'gone.pdf');
  const gone: InputDocument = { uri: missing, size: 10, bytes: () => readFile(missing) };
  const plan = await planDocument(gone, V2, { storage });
  assert.deepEqual(plan, { status: 'rejected', uri: missing, reason: `cannot read it: ENOENT: no such file or directory, open '${missing}'` });
});

test('V3 parse-multi groups pages into single-pass requests by the 2048-token default output budget', async () => {
  // 1 + 4 prompt + n·(273 image + 2048 output) ≤ 32768 holds up to n = 14: three pages make one request.
  const plan = await planned(threePages, V3_MULTI);
  assert.deepEqual(plan.pageJobs.map((job) => [job.firstPage, job.lastPage]), [[1, 3]]);
});

test('V3 parse-multi groups pages by maxNewTokens as the output budget per page', async () => {
  // 1 + 4 + n·(273 + 16000) ≤ 32768 holds up to n = 2: pages 1–2, then page 3.
  const plan = await planned(threePages, { ...V3_MULTI, maxNewTokens: 16000 });
  assert.deepEqual(plan.pageJobs.map((job) => [job.firstPage, job.lastPage]), [[1, 2], [3, 3]]);
});

test('V3 single-page parse plans one job per page', async () => {
  const plan = await planned(threePages, { ...V3_MULTI, task: 'parse' });
  assert.deepEqual(plan.pageJobs.map((job) => [job.firstPage, job.lastPage]), [[1, 1], [2, 2], [3, 3]]);
});

test('a document whose results/<docId>/_DONE exists is planned as already done', async () => {
  const options = { ...V2, dpi: 300 };
  await storage.put(`results/${documentId(threePages, options)}/_DONE`, Buffer.alloc(0));
  assert.equal((await planned(threePages, options)).alreadyDone, true);
});

test('stageSource uploads the source once: a second call finds it staged', async () => {
  const counting = new PutCountingStorage(root);
  const plan = await planned(threePages, { ...V2, mode: 'base' });
  assert.equal(await stageSource(plan, counting), 'uploaded');
  assert.equal(await stageSource(plan, counting), 'already-staged');
  assert.deepEqual(counting.puts, [plan.keys.source, stagedJobKey(plan.docId)]);
  assert.deepEqual(await storage.get(plan.keys.source), threePages);
  assert.deepEqual(parseDocumentJobData(JSON.parse((await storage.get(stagedJobKey(plan.docId))).toString('utf8'))), plan.documentJob);
});

test('stageSource records the document job of a source staged without one (by an earlier version)', async () => {
  const plan = await planned(threePages, { ...V2, mode: 'small' });
  await storage.put(plan.keys.source, threePages);
  assert.equal(await stageSource(plan, storage), 'already-staged');
  assert.deepEqual(JSON.parse((await storage.get(stagedJobKey(plan.docId))).toString('utf8')), plan.documentJob);
});

test('stageSource uploads again over a staged object of another size', async () => {
  const plan = await planned(threePages, { ...V2, mode: 'large' });
  await storage.put(plan.keys.source, threePages.subarray(0, 100));
  assert.equal(await stageSource(plan, storage), 'uploaded');
  assert.deepEqual(await storage.get(plan.keys.source), threePages);
});
