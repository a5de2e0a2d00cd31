// The storage layout: every key the pipeline writes, as one table of expectations.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  checkDocId,
  docIdOfStagedKey,
  docIdOfDoneMarker,
  docIdOfFailedPagesMarker,
  documentKeys,
  documentResultKeys,
  inputLinkKey,
  isPipelineKey,
  pageAttemptKeys,
  pageAttemptsFolder,
  pageResultKey,
  rejectedInputKey,
  resultsFolder,
  stagedDocumentsFolder,
  stagedJobKey,
} from '../../src/jobs/storage-layout.js';

const DOC_ID = '0123456789abcdef0123456789abcdef';

test('a document stages its source under staging/ with its type as extension, and its results under results/', () => {
  assert.deepEqual(documentKeys(DOC_ID, 'jpeg'), { source: `staging/${DOC_ID}/source.jpeg`, results: `results/${DOC_ID}/` });
  assert.equal(resultsFolder(DOC_ID), `results/${DOC_ID}/`);
});

test("a staged document's job is staging/<docId>/job.json; staged keys give their docId back, uploads none", () => {
  assert.equal(stagedJobKey(DOC_ID), `staging/${DOC_ID}/job.json`);
  assert.equal(docIdOfStagedKey(`staging/${DOC_ID}/job.json`), DOC_ID);
  assert.equal(docIdOfStagedKey(documentKeys(DOC_ID, 'pdf').source), DOC_ID);
  for (const key of ['staging/uploads/5f0c4e1a-1b2c-4d3e-8f90-123456789abc', `results/${DOC_ID}/_DONE`, `staging/${DOC_ID}`]) assert.equal(docIdOfStagedKey(key), undefined);
  assert.equal(stagedDocumentsFolder(), 'staging/');
  assert.equal(stagedDocumentsFolder('0a'), 'staging/0a');
  for (const bad of ['0A', 'up', '../', '0'.repeat(33)]) assert.throws(() => stagedDocumentsFolder(bad), RangeError);
});

test('a page result is results/<docId>/pages/<nnnn>.json or .md, 1-based and four digits', () => {
  assert.equal(pageResultKey(DOC_ID, 1, 'json'), `results/${DOC_ID}/pages/0001.json`);
  assert.equal(pageResultKey(DOC_ID, 123, 'md'), `results/${DOC_ID}/pages/0123.md`);
  assert.equal(pageResultKey(DOC_ID, 12345, 'md'), `results/${DOC_ID}/pages/12345.md`);
});

test("a try's page is results/<docId>/attempts/<nnnn>-<attempt id>.json or .md; an id that is no UUID-like name makes no key", () => {
  const attemptId = '5f0c4e1a-1b2c-4d3e-8f90-123456789abc';
  assert.equal(pageAttemptsFolder(DOC_ID), `results/${DOC_ID}/attempts/`);
  assert.deepEqual(pageAttemptKeys(DOC_ID, 7, attemptId), {
    key: `results/${DOC_ID}/attempts/0007-${attemptId}.json`,
    markdownKey: `results/${DOC_ID}/attempts/0007-${attemptId}.md`,
  });
  for (const bad of ['', '../x', 'A1', 'a/b', 'f'.repeat(65)]) assert.throws(() => pageAttemptKeys(DOC_ID, 1, bad), RangeError);
  assert.throws(() => pageAttemptKeys(DOC_ID, 0, attemptId), RangeError);
});

test('a page number below 1 or fractional makes no key', () => {
  assert.throws(() => pageResultKey(DOC_ID, 0, 'json'), RangeError);
  assert.throws(() => pageResultKey(DOC_ID, 1.5, 'json'), RangeError);
});

test('the assembled document is document.md, document.json and the _DONE marker in its results folder', () => {
  assert.deepEqual(documentResultKeys(DOC_ID), {
    markdown: `results/${DOC_ID}/document.md`,
    json: `results/${DOC_ID}/document.json`,
    done: `results/${DOC_ID}/_DONE`,
    failedPages: `results/${DOC_ID}/_FAILED_PAGES`,
  });
});

test('the markers of a document give back its docId; other keys give none', () => {
  const keys = documentResultKeys(DOC_ID);
  assert.deepEqual([docIdOfDoneMarker(keys.done), docIdOfFailedPagesMarker(keys.failedPages)], [DOC_ID, DOC_ID]);
  for (const key of [keys.json, keys.failedPages, `results/${DOC_ID}/pages/_DONE`, `x/results/${DOC_ID}/_DONE`]) assert.equal(docIdOfDoneMarker(key), undefined, key);
  assert.equal(docIdOfFailedPagesMarker(keys.done), undefined);
});

test('a rejected input is recorded under rejected/ by 32 hex digits of its uri', () => {
  assert.equal(rejectedInputKey('s3://inbox/notes.txt'), rejectedInputKey('s3://inbox/notes.txt'));
  assert.match(rejectedInputKey('s3://inbox/notes.txt'), /^rejected\/[0-9a-f]{32}\.json$/);
  assert.notEqual(rejectedInputKey('s3://inbox/a.txt'), rejectedInputKey('s3://inbox/b.txt'));
});

test('a link to an input’s results is by-input/<name>, a name that cannot leave the folder', () => {
  assert.equal(inputLinkKey('samples/sample.pdf'), 'by-input/samples/sample.pdf');
  assert.throws(() => inputLinkKey('../etc'), /'\.\.' segment/);
});

test('an id that documentId cannot have made becomes no key', () => {
  const message = /docId must be 32 lowercase hex digits, as documentId returns; got "\.\.\/etc"/;
  assert.throws(() => documentKeys('../etc', 'pdf'), message);
  assert.throws(() => documentResultKeys('../etc'), message);
  assert.throws(() => pageResultKey('../etc', 1, 'md'), message);
  assert.throws(() => checkDocId(DOC_ID.toUpperCase()), RangeError);
});

test('every key the layout builds lies in a pipeline folder; other keys do not', () => {
  const built = [
    documentKeys(DOC_ID, 'pdf').source,
    pageResultKey(DOC_ID, 2, 'json'),
    documentResultKeys(DOC_ID).done,
    rejectedInputKey('/in/notes.txt'),
    inputLinkKey('in/notes.pdf'),
  ];
  for (const key of built) assert.equal(isPipelineKey(key), true, key);
  for (const key of ['inbox/a.pdf', 'results', 'resultsx/a.pdf', 'stagingarea/a.pdf', 'a/results/b.pdf']) {
    assert.equal(isPipelineKey(key), false, key);
  }
});
