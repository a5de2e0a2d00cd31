// `scriptorium run`: the whole pipeline in one command, for one machine: a private redis-server
// (unless REDIS_URL names one), file storage in the output folder, a worker in this process,
// enqueue, wait for every document, report where the results are, shut everything down.
import { VARIANTS } from '../vocabulary/ocr-vocabulary.js';
import { loadModelConfig } from '../engine/model-config.js';
import { QueueCapacity } from '../queue/queue-capacity.js';
import { unfinishedDocumentCount } from '../queue/queue-status.js';
import { openStorage } from '../storage/open-storage.js';
import { commandLogger } from './cli-logger.js';
import { checkpointIdentity } from '../model/checkpoint-identity.js';
import { resolveModelDir } from '../model/model-resolve.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { BATCH_OPTION, BATCH_USAGE, ENGINE_OPTIONS, ENGINE_OPTIONS_USAGE, engineChoices } from './engine-options.js';
import { EXIT_INTERRUPTED } from './document-report.js';
import { DOCUMENT_LIMIT_OPTIONS, DOCUMENT_LIMITS_USAGE, documentLimitsOf, MAX_QUEUED_PAGES_OPTION, MAX_QUEUED_PAGES_USAGE } from './enqueue-args.js';
import { enqueueAndFollow } from './enqueue-and-follow.js';
import { progressTerminal } from './enqueue-progress.js';
import { OCR_JOB_ARGS_USAGE, OCR_JOB_OPTIONS, ocrJobOptionsOf, pdfPasswordOf } from './ocr-job-args.js';
import { startOcrWorkers, type OcrWorkers } from '../worker/ocr-workers.js';
import { openQueueRedis, type QueueRedis } from './queue-redis.js';
import { onShutdownSignal } from './shutdown-signals.js';
import { choice, integer, text } from './options.js';

const USAGE = `Usage: scriptorium run INPUT... --out DIR [--model DIR] [--variant v1|v2|v3] [--task T] [--mode M]
                      [--dpi N | --longest-side PX] [--max-tokens N] [--password-env NAME | --password P]
                      [--batch N|auto] [--threads T] [--device D] [--precision exact|fast]
                      [--quantize none|int8] [--max-queued-pages N]

Reads every document of the inputs through the queue pipeline on this machine and waits for all
of them: INPUT is a PDF or image file, a directory (recursively), a zip or tar(.gz) archive, or
s3://bucket/prefix. Results go to DIR/results/<docId>/ (document.md, document.json, pages/, _DONE),
and DIR/by-input/ links each one by its input's name: \`run scans --out DIR\` puts the results of
scans/a.pdf at DIR/by-input/scans/a.pdf/. Sources are staged in DIR/staging/. Documents finished by an earlier run into DIR are not read again,
so after an interruption the same command resumes.

Redis: a private redis-server child process (the redis-server package must be installed; its URL
is printed on stderr, for \`scriptorium status\` and \`dashboard\`) unless $REDIS_URL names one; with a
shared Redis, other workers may take part and this one may take their jobs.

Ctrl-C (SIGINT) or SIGTERM stops the run: no new pages are taken, the pages already being read
finish (at most 2 x --batch of them), and it exits. A second one stops at once and says how many
documents are left; the same command again reads them.

  --out DIR         the output folder (file storage)
  --model DIR       checkpoint (default $SCRIPTORIUM_MODEL, else the synthetic tiny V3 checkpoint)
  --variant V       overrides the variant detected from config.json
${OCR_JOB_ARGS_USAGE}
${DOCUMENT_LIMITS_USAGE}
${MAX_QUEUED_PAGES_USAGE}; this run waits for room before queueing each document
${BATCH_USAGE}
  --threads T       engine threads (default: one per CPU)
${ENGINE_OPTIONS_USAGE}

When stderr is a terminal, a progress line shows the documents found and queued, then the pages and
documents finished; the lines on stdout stay the same.

Exit status: 0 when every page of every input was read; 3 when an input was rejected or a page or
a document failed (each is listed with its reason); 130 when interrupted.`;

const OPTIONS = {
  out: text().required(),
  model: text(),
  variant: choice(VARIANTS),
  batch: BATCH_OPTION,
  threads: integer({ min: 1 }),
  ...ENGINE_OPTIONS,
  ...OCR_JOB_OPTIONS,
  ...DOCUMENT_LIMIT_OPTIONS,
  'max-queued-pages': MAX_QUEUED_PAGES_OPTION,
};

export const runCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'INPUT', min: 1 }, run: runPipeline });

async function runPipeline({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { batch, threads } = values;
  const storage = openStorage(values.out);
  const pdfPassword = pdfPasswordOf(values);

  // From here on a signal stops the run, whatever it is doing: starting, enqueueing or waiting.
  const interrupted = new AbortController();
  let redis: QueueRedis | undefined;
  let workers: OcrWorkers | undefined;
  let capacity: QueueCapacity | undefined;
  const removeSignalHandlers = onShutdownSignal(() => interrupted.abort(), {
    stoppingLine: (signal) => `${signal}: stopping: no new pages are taken, the ${workers?.claimedPages() ?? 0} being read finish first (send it again to stop at once)`,
    forcedLine: (signal) => leftLine(signal, redis),
  });
  try {
    const model = await resolveModelDir(values.model);
    const { variant } = await loadModelConfig(model.dir, values.variant);
    const ocr = ocrJobOptionsOf(values, variant);
    const logger = commandLogger('warn');
    if (interrupted.signal.aborted) return EXIT_INTERRUPTED;
    redis = await openQueueRedis({ privateWhenUnset: true });
    if (redis.private) {
      process.stderr.write(`scriptorium run: a private Redis at ${redis.url}; watch it with REDIS_URL=${redis.url} scriptorium status (or dashboard)\n`);
    }
    if (interrupted.signal.aborted) return EXIT_INTERRUPTED;
    workers = await startOcrWorkers({ model, checkpointId: checkpointIdentity(model.dir), variant, threads, ...engineChoices(values), storage, redisUrl: redis.url, batch, logger });
    if (interrupted.signal.aborted) return EXIT_INTERRUPTED;
    capacity = new QueueCapacity(redis.url, values['max-queued-pages']);
    return await enqueueAndFollow({
      inputs: positionals,
      enqueue: { ocr, storage, pdfPassword, limits: documentLimitsOf(values) },
      redisUrl: redis.url,
      wait: true,
      signal: interrupted.signal,
      progress: progressTerminal(),
      room: { capacity, wait: true },
    });
  } finally {
    await capacity?.close();
    await workers?.close();
    if (interrupted.signal.aborted) process.stderr.write('scriptorium run: stopped\n');
    removeSignalHandlers();
    await redis?.close();
  }
}

/** After a second signal: what is left undone, and how the next run picks it up. */
async function leftLine(signal: NodeJS.Signals, redis: QueueRedis | undefined): Promise<string> {
  const unfinished = redis === undefined ? 0 : await unfinishedDocumentCount(redis.url);
  const documents = `${unfinished} document${unfinished === 1 ? '' : 's'}`;
  if (redis === undefined || !redis.private) {
    return `${signal} again: stopped at once; ${documents} unfinished in the queue: the pages this process held are read again by any worker once their locks expire, or by the same command run again`;
  }
  return `${signal} again: stopped at once with ${documents} unfinished: the same command again reads them (finished documents are skipped)`;
}
