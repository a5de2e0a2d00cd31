// What `enqueue --wait` and `run` print when documents settle: a line of flagged pages after a
// document's line, and after the last line the flagged pages counted with those needing review.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exitStatusOf, finishedLine, flaggedPagesLine, flaggedTotalLine } from '../../src/cli/document-report.js';
import type { DocumentOutcome } from '../../src/jobs/job-types.js';
import type { EnqueueSummary, QueuedDocument } from '../../src/producer/enqueue.js';
import type { DocumentSettlement } from '../../src/queue/document-watcher.js';

const DOC_ID = 'a'.repeat(32);
const DOCUMENT: QueuedDocument = { state: 'enqueued', uri: 'scans/a.pdf', docId: DOC_ID, pages: 3, keys: { source: 's', results: 'r' } };

type Completed = Extract<DocumentSettlement, { status: 'completed' }>;

function completed(outcome: Partial<DocumentOutcome>): Completed {
  return { docId: DOC_ID, status: 'completed', returnvalue: { docId: DOC_ID, markdown: 'm', json: 'j', pages: 3, failedPages: [], ...outcome } };
}

test("an assembled document's flagged pages follow it on a line of their own; none, no line", () => {
  const settlement = completed({ flagged: [{ page: 2, flags: ['max_tokens', 'repetition'] }, { page: 3, flags: ['empty'] }] });
  assert.equal(flaggedPagesLine(DOCUMENT, settlement), 'flagged        scans/a.pdf  page 2: max_tokens, repetition; page 3: empty');
  assert.equal(flaggedPagesLine(DOCUMENT, completed({ flagged: [] })), undefined);
  assert.equal(flaggedPagesLine(DOCUMENT, completed({})), undefined, 'a return value of an earlier version');
});

test('after the last line, the flagged pages are counted with those needing review; none, no line', () => {
  const settlements: DocumentSettlement[] = [
    completed({ flagged: [{ page: 1, flags: ['timeout'] }, { page: 3, flags: ['empty'] }] }),
    completed({ failedPages: [{ page: 2, reason: 'unreadable' }], flagged: [{ page: 1, flags: ['max_tokens'] }] }),
    { docId: DOC_ID, status: 'failed', reason: 'storage down' },
  ];
  assert.equal(finishedLine(settlements), '3 documents finished: 1 complete, 1 with failed pages, 1 failed');
  assert.equal(flaggedTotalLine(settlements), '3 pages flagged, 2 needing review: `scriptorium retry --flagged` reads them again');
  assert.equal(flaggedTotalLine([completed({ flagged: [{ page: 1, flags: ['empty'] }] })]), '1 page flagged, 0 needing review');
  assert.equal(flaggedTotalLine([completed({})]), undefined);
});

test('flagged pages leave the exit status at 0: they were read', () => {
  const summary: EnqueueSummary = { documents: 1, pages: 3, skippedDone: 0, alreadyQueued: 0, rejected: [], queued: [DOCUMENT] };
  assert.equal(exitStatusOf(summary, [completed({ flagged: [{ page: 1, flags: ['repetition'] }] })]), 0);
});
