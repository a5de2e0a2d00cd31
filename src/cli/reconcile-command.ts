// `scriptorium reconcile [--prefix P] [--dry-run]`: after Redis lost its data, queue again every
// staged document that is unfinished and has no job in Redis; prints a line per document queued (or
// that cannot be) and a summary of what it found.
import { stagedDocumentsFolder } from '../jobs/storage-layout.js';
import { RECONCILE_CONCURRENCY, reconcileDocuments, type ReconcileOutcome } from '../producer/reconcile-documents.js';
import { redisOptions } from '../queue/redis.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ATTEMPTS_OPTION } from './enqueue-args.js';
import { PASSWORD_OPTIONS, pdfPasswordOf } from './ocr-job-args.js';
import { flag, integer, parsedBy, text } from './options.js';
import { openQueueRedis } from './queue-redis.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { DEFAULT_PAGE_ATTEMPTS } from '../queue/job-options.js';

const USAGE = `Usage: scriptorium reconcile [--storage URL] [--prefix P] [--dry-run] [--attempts N] [--concurrency N] [--password-env NAME | --password P]

Recovery after Redis lost its data (emptied, or restarted without persistence): finds every document
staged in the storage (staging/<docId>/) that is not finished (no _DONE; _FAILED_PAGES is left to
\`scriptorium retry\`; _CANCELLED is left alone) and has no document job in Redis ($REDIS_URL, default
redis://127.0.0.1:6379), and queues exactly its pages without a stored result, with the document
job that assembles them, from the staged source and the options it was queued with. Running it
again queues nothing twice.

  --storage URL       ${STORAGE_URL_USAGE}
  --prefix P          only documents whose docId starts with the hex digits P (to split a large storage)
  --dry-run           say what would be queued; queue nothing
  --attempts N        tries per page before it is recorded as failed (default ${DEFAULT_PAGE_ATTEMPTS})
  --concurrency N     documents looked at and queued at once (default ${RECONCILE_CONCURRENCY}); each holds its source in memory while queued
  --password P        password of encrypted PDFs (or --password-env NAME: read from that variable)

Exit status: 0 when every unfinished document is queued (or in the queue), 3 when one cannot be (each listed with the reason).`;

const EXIT_SOME_NOT_QUEUED = 3;

const OPTIONS = {
  storage: text(),
  prefix: parsedBy((prefix) => {
    try {
      stagedDocumentsFolder(prefix);
    } catch {
      throw new Error(`--prefix must be up to 32 lowercase hex digits, the start of docIds (got "${prefix}")`);
    }
    return prefix;
  }),
  'dry-run': flag(),
  attempts: ATTEMPTS_OPTION,
  concurrency: integer({ min: 1 }).default(RECONCILE_CONCURRENCY),
  ...PASSWORD_OPTIONS,
};

export const reconcileCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runReconcile });

async function runReconcile({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const pdfPassword = pdfPasswordOf(values);
  const storage = openCommandStorage(values.storage);
  const dryRun = values['dry-run'];
  const counts = { staged: 0, finished: 0, inQueue: 0, queued: 0, pages: 0, notQueued: 0 };
  const redis = await openQueueRedis();
  try {
    const outcomes = reconcileDocuments({ storage, connection: redisOptions(redis.url, 'client'), docIdPrefix: values.prefix, dryRun, pdfPassword, attempts: values.attempts, concurrency: values.concurrency });
    for await (const outcome of outcomes) {
      counts.staged++;
      if (outcome.status === 'finished') counts.finished++;
      else if (outcome.status === 'in-queue') counts.inQueue++;
      else if (outcome.status === 'not-queued') counts.notQueued++;
      else {
        counts.queued++;
        counts.pages += outcome.pagesToRead;
      }
      const line = outcomeLine(outcome);
      if (line !== undefined) process.stdout.write(`${line}\n`);
    }
  } finally {
    await redis.close();
  }
  const queued = `${counts.queued} ${dryRun ? 'would be queued' : 'queued again'} (${counts.pages} page${counts.pages === 1 ? '' : 's'} to read)`;
  process.stdout.write(
    `${counts.staged} staged document${counts.staged === 1 ? '' : 's'} in ${storage.url}: ${counts.finished} finished, ${counts.inQueue} in the queue, ${queued}, ${counts.notQueued} cannot be queued\n`,
  );
  return counts.notQueued === 0 ? 0 : EXIT_SOME_NOT_QUEUED;
}

/** The line for a document reconcile acted on, or could not; finished and queued documents are only counted. */
function outcomeLine(outcome: ReconcileOutcome): string | undefined {
  switch (outcome.status) {
    case 'queued':
    case 'would-queue':
      return `${outcome.docId}: ${outcome.status === 'queued' ? 'queued again' : 'would be queued'}: ${outcome.pagesToRead} of ${outcome.pageCount} pages to read, then assembled (${outcome.uri})`;
    case 'not-queued':
      return `${outcome.docId}: cannot be queued: ${outcome.reason}`;
    default:
      return undefined;
  }
}
