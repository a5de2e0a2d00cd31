// `scriptorium retry DOCID...|--failed`: queue the failed pages of assembled documents again; the
// documents are assembled again once those pages have settled.
import { isDocId } from '../jobs/storage-layout.js';
import { documentsWithFailedPages, retryFailedPages, type RetryOutcome } from '../producer/retry-failed-pages.js';
import { redisOptions } from '../queue/redis.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ATTEMPTS_OPTION } from './enqueue-args.js';
import { PASSWORD_OPTIONS, pdfPasswordOf } from './ocr-job-args.js';
import { flag, text } from './options.js';
import { openQueueRedis } from './queue-redis.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { UsageError } from './usage.js';

const USAGE = `Usage: scriptorium retry (DOCID... | --failed) [--storage URL] [--attempts N] [--password-env NAME | --password P]

Queues again exactly the failed pages of documents that were assembled with failed pages (their
results/<docId>/_FAILED_PAGES marker lists them with the reasons), from the staged source and with the
options they were read with, on Redis ($REDIS_URL, default redis://127.0.0.1:6379). Workers read those
pages and assemble each document again: _DONE once every page has succeeded.

  --failed            every document in the storage with failed pages
  --storage URL       ${STORAGE_URL_USAGE}
  --attempts N        tries per page before it is recorded as failed again (default 3)
  --password P        password of an encrypted PDF (or --password-env NAME: read from that variable)

Exit status: 0 when every document was queued again, 3 when one was not (each listed with the reason).`;

const EXIT_SOME_NOT_RETRIED = 3;

const OPTIONS = { failed: flag(), storage: text(), attempts: ATTEMPTS_OPTION, ...PASSWORD_OPTIONS };

export const retryCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'DOCID', min: 0 }, run: runRetry });

async function runRetry({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  if (values.failed === (positionals.length > 0)) throw new UsageError('give DOCIDs or --failed');
  const wrong = positionals.find((docId) => !isDocId(docId));
  if (wrong !== undefined) throw new UsageError(`"${wrong}" is no DOCID: 32 lowercase hex digits, as enqueue and run print them`);
  const pdfPassword = pdfPasswordOf(values);
  const { attempts } = values;
  const storage = openCommandStorage(values.storage);

  const redis = await openQueueRedis();
  let notRetried = 0;
  try {
    const docIds = values.failed ? documentsWithFailedPages(storage) : positionals;
    for await (const docId of docIds) {
      const outcome = await retryFailedPages(docId, { storage, connection: redisOptions(redis.url, 'client'), pdfPassword, attempts });
      if (outcome.status !== 'requeued') notRetried++;
      process.stdout.write(`${outcomeLine(outcome)}\n`);
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
