// `scriptorium retry DOCID...|--failed|--flagged`: queue the failed pages of assembled documents again,
// or (--flagged) read the pages flagged for review again with the read options given; the documents
// are assembled again once those pages have settled.
import { isDocId } from '../jobs/storage-layout.js';
import { documentsWithFailedPages, retryFailedPages, type RetryOutcome } from '../producer/retry-failed-pages.js';
import { documentsDone, retryFlaggedPages, type FlaggedRetryOutcome } from '../producer/retry-flagged-pages.js';
import { redisOptions } from '../queue/redis.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ATTEMPTS_OPTION } from './enqueue-args.js';
import { OCR_JOB_OPTIONS, ocrJobChoicesOf, pdfPasswordOf } from './ocr-job-args.js';
import { flag, text } from './options.js';
import { openQueueRedis } from './queue-redis.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { UsageError } from './usage.js';
import { DEFAULT_PAGE_ATTEMPTS } from '../queue/job-options.js';

const USAGE = `Usage: scriptorium retry (DOCID... | --failed) [--storage URL] [--attempts N] [--password-env NAME | --password P]
       scriptorium retry --flagged [DOCID...] [--task T] [--mode M] [--dpi N | --longest-side PX] [--max-tokens N]
                         [--storage URL] [--attempts N] [--password-env NAME | --password P]

Queues again exactly the failed pages of documents that were assembled with failed pages (their
results/<docId>/_FAILED_PAGES marker lists them with the reasons), from the staged source and with the
options they were read with, on Redis ($REDIS_URL, default redis://127.0.0.1:6379). Workers read those
pages and assemble each document again: _DONE once every page has succeeded.

With --flagged, it reads again the pages of finished documents that are flagged for review
(max_tokens, timeout or repetition in document.json's "flagged"; a page flagged empty only is left
alone), with the options the document was read with changed by those given here: the new results
replace the old ones, and the document is assembled again. A page whose new reading fails keeps its
old result.

  --failed            every document in the storage with failed pages
  --flagged           the flagged pages of the DOCIDs given, or of every finished document in the storage
  --task, --mode, --dpi, --longest-side, --max-tokens
                      with --flagged only: read those pages so (as enqueue's options; the others stay
                      as the document was read)
  --storage URL       ${STORAGE_URL_USAGE}
  --attempts N        tries per page before it is recorded as failed again (default ${DEFAULT_PAGE_ATTEMPTS})
  --password P        password of an encrypted PDF (or --password-env NAME: read from that variable)

Exit status: 0 when every document was queued again, 3 when one was not (each listed with the reason).`;

const EXIT_SOME_NOT_RETRIED = 3;

const OPTIONS = { failed: flag(), flagged: flag(), storage: text(), attempts: ATTEMPTS_OPTION, ...OCR_JOB_OPTIONS };

/** The options that say how pages are read: only --flagged reads pages with other options. */
const READ_OPTIONS = ['task', 'mode', 'dpi', 'longest-side', 'max-tokens'] as const;

export const retryCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'DOCID', min: 0 }, run: runRetry });

async function runRetry({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  if (values.failed && values.flagged) throw new UsageError('give --failed or --flagged, not both');
  if (!values.flagged && values.failed === (positionals.length > 0)) throw new UsageError('give DOCIDs, --failed or --flagged');
  const readOption = READ_OPTIONS.find((name) => values[name] !== undefined);
  if (!values.flagged && readOption !== undefined) {
    throw new UsageError(`--${readOption} goes with --flagged only: failed pages are read again with the options they were read with`);
  }
  const wrong = positionals.find((docId) => !isDocId(docId));
  if (wrong !== undefined) throw new UsageError(`"${wrong}" is no DOCID: 32 lowercase hex digits, as enqueue and run print them`);
  const changes = ocrJobChoicesOf(values);
  const pdfPassword = pdfPasswordOf(values);
  const { attempts } = values;
  const storage = openCommandStorage(values.storage);

  const redis = await openQueueRedis();
  const connection = redisOptions(redis.url, 'client');
  let notRetried = 0;
  try {
    if (values.flagged) {
      // Scanning the whole storage, documents with nothing to review are passed over in silence.
      const scanning = positionals.length === 0;
      for await (const docId of scanning ? documentsDone(storage) : positionals) {
        const outcome = await retryFlaggedPages(docId, { storage, connection, changes, pdfPassword, attempts });
        if (outcome.status === 'nothing-flagged' && scanning) continue;
        if (outcome.status !== 'requeued') notRetried++;
        process.stdout.write(`${flaggedOutcomeLine(outcome)}\n`);
      }
    } else {
      const docIds = values.failed ? documentsWithFailedPages(storage) : positionals;
      for await (const docId of docIds) {
        const outcome = await retryFailedPages(docId, { storage, connection, pdfPassword, attempts });
        if (outcome.status !== 'requeued') notRetried++;
        process.stdout.write(`${outcomeLine(outcome)}\n`);
      }
    }
  } finally {
    await redis.close();
  }
  return notRetried === 0 ? 0 : EXIT_SOME_NOT_RETRIED;
}

function outcomeLine(outcome: RetryOutcome): string {
  switch (outcome.status) {
    case 'requeued':
      return `${outcome.docId}: ${outcome.failedPages} failed page${outcome.failedPages === 1 ? '' : 's'} queued again (${outcome.queued.uri})`;
    case 'not-failed':
      return `${outcome.docId}: not retried: ${outcome.reason}`;
    case 'rejected':
      return `${outcome.docId}: cannot be read again: ${outcome.reason}`;
  }
}

function flaggedOutcomeLine(outcome: FlaggedRetryOutcome): string {
  switch (outcome.status) {
    case 'requeued': {
      const { pages, options } = outcome;
      const how = [`mode ${options.mode}`, `task ${options.task}`, options.dpi === undefined ? `longest side ${options.longestSide}` : `${options.dpi} dpi`];
      if (options.maxNewTokens !== undefined) how.push(`at most ${options.maxNewTokens} tokens`);
      return `${outcome.docId}: ${pages.length} flagged page${pages.length === 1 ? '' : 's'} (${pages.join(', ')}) queued again, ${how.join(', ')} (${outcome.uri})`;
    }
    case 'nothing-flagged':
      return `${outcome.docId}: not retried: none of its pages is flagged for review`;
    case 'not-retried':
      return `${outcome.docId}: not retried: ${outcome.reason}`;
  }
}
