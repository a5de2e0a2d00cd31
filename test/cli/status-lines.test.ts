// What `scriptorium status` prints from a queue status: an ETA only while workers are alive, rates
// per kind of page, the slowest kind deciding when the pages are through, the flagged pages, and each
// API key's usage.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { statusLines } from '../../src/cli/status-command.js';
import type { LiveWorker } from '../../src/queue/live-workers.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import type { QueueStatus } from '../../src/queue/queue-status.js';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
const COUNTS = { waiting: 0, prioritized: 0, active: 0, delayed: 0, 'waiting-children': 0, completed: 0, failed: 0, paused: 0 };
const WORKER: LiveWorker = {
  host: 'ocr-1',
  pid: 7,
  backend: 'cpu-avx2',
  threads: 8,
  variant: 'v1',
  checkpoint: 'sha256:abc',
  startedAt: NOW - 60_000,
  lastHeartbeat: NOW - 2_000,
  currentJobs: [],
  pagesDone: 0,
  pagesFailed: 0,
};

const NONE_FLAGGED = { max_tokens: 0, timeout: 0, repetition: 0, empty: 0 };

function status(liveWorkers: LiveWorker[], flagged = NONE_FLAGGED): QueueStatus {
  return {
    queues: [
      { queue: DOCUMENTS, workers: liveWorkers.length, counts: COUNTS },
      { queue: pageQueue('v1'), workers: liveWorkers.length, counts: COUNTS },
    ],
    documents: { kind: 'documents', completed: 2, perMinute: 0.2, left: 3 },
    pages: [
      // 100 tiny pages at 50 a minute: 2 min; 30 gundam pages at 1 a minute: 30 min.
      { kind: 'v1-markdown-gundam', completed: 10, perMinute: 1, left: 30 },
      { kind: 'v1-markdown-tiny', completed: 500, perMinute: 50, left: 100 },
    ],
    flagged,
    liveWorkers,
    failed: [],
    apiKeys: [],
  };
}

function rowOf(lines: string[], label: string): string {
  const row = lines.filter((line) => line.startsWith(label)).at(-1);
  assert.ok(row !== undefined, `no row ${label} in\n${lines.join('\n')}`);
  return row;
}

test('without a live worker, no ETA is given: the time left says "no live workers"', () => {
  const lines = statusLines(status([]), 'redis://r', 10, NOW);
  assert.match(rowOf(lines, '{scriptorium}:documents'), /no live workers$/);
  assert.match(rowOf(lines, 'pages (all variants)'), /no live workers$/);
  assert.match(rowOf(lines, '  v1-markdown-tiny'), /no live workers$/);
  assert.ok(lines.includes('no live workers (start one with `scriptorium work`)'));
});

test('each kind of page has its own rate and time left; the slowest kind gives the queue its ETA', () => {
  const lines = statusLines(status([WORKER]), 'redis://r', 10, NOW);
  assert.match(rowOf(lines, '  v1-markdown-tiny'), /500 pages\s+50\.0\s+100 pages\s+2 min$/);
  assert.match(rowOf(lines, '  v1-markdown-gundam'), /10 pages\s+1\.0\s+30 pages\s+30 min$/);
  // One rate over both kinds (51 a minute) would have promised 3 minutes.
  assert.match(rowOf(lines, 'pages (all variants)'), /510 pages\s+51\.0\s+130 pages\s+30 min$/);
  assert.match(rowOf(lines, '{scriptorium}:documents'), /2 documents\s+0\.2\s+3 documents\s+15 min$/);
});

test("each API key's usage is shown by name beside its class and quotas ('-': no limit)", () => {
  const resetsAt = '2030-01-02T00:00:00.000Z';
  const lines = statusLines(
    {
      ...status([WORKER]),
      apiKeys: [
        { name: 'alice', quota: { priorityClass: 'interactive' }, usage: { pagesToday: 12, documentsInFlight: 1, resetsAt } },
        { name: 'archive', quota: { priorityClass: 'bulk', pagesPerDay: 5000, documentsInFlight: 20 }, usage: { pagesToday: 4200, documentsInFlight: 20, resetsAt } },
      ],
    },
    'redis://r',
    10,
    NOW,
  );
  assert.match(rowOf(lines, 'API key'), /^API key\s+class\s+pages today\s+per day\s+in flight\s+limit$/);
  assert.match(rowOf(lines, 'alice'), /^alice\s+interactive\s+12\s+-\s+1\s+-$/);
  assert.match(rowOf(lines, 'archive'), /^archive\s+bulk\s+4200\s+5000\s+20\s+20$/);
});

test('without recorded API keys there is no key table', () => {
  assert.ok(!statusLines(status([WORKER]), 'redis://r', 10, NOW).some((line) => line.startsWith('API key')));
});

test('the pages flagged in the window are counted per flag, or said to be none', () => {
  assert.ok(statusLines(status([WORKER]), 'redis://r', 10, NOW).includes('pages flagged in 10 min: none'));
  const lines = statusLines(status([WORKER], { ...NONE_FLAGGED, max_tokens: 3, repetition: 2 }), 'redis://r', 5, NOW);
  assert.ok(lines.includes('pages flagged in 5 min: 3 max_tokens, 2 repetition'), lines.join('\n'));
});
