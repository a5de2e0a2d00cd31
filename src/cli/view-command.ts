// `scriptorium view`: the page viewer over one storage, on 127.0.0.1 without keys, until SIGTERM or
// SIGINT. Its retry button queues on the Redis other commands use; without one that answers, the
// button is shown disabled with the reason.
import { redisOptions } from '../queue/redis.js';
import { startViewerServer } from '../server/viewer-server.js';
import { commandLogger } from './cli-logger.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ATTEMPTS_OPTION } from './enqueue-args.js';
import { port, text } from './options.js';
import { openQueueRedis } from './queue-redis.js';
import { serverStopMessages, shutdownSignal } from './shutdown-signals.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { DEFAULT_PAGE_ATTEMPTS } from '../queue/job-options.js';

const DEFAULT_PORT = 8090;

const USAGE = `Usage: scriptorium view [--storage URL] [--port P] [--attempts N]

Serves the page viewer at http://127.0.0.1:P/viewer/, for this machine only (no key is asked for):
the documents of the storage with their state, pages, flagged pages and confidence, and each page's
image with its layout boxes beside its text. Keys: j/k or →/← for the next/previous page, n for the
next page that needs review. A failed page has a retry button that queues exactly that page on Redis
($REDIS_URL, default redis://127.0.0.1:6379) for \`scriptorium work\`; without a Redis that answers,
the button is disabled and says why.

  --storage URL   ${STORAGE_URL_USAGE}
  --port P        port to listen on (default ${DEFAULT_PORT})
  --attempts N    tries of a retried page before it is recorded as failed again (default ${DEFAULT_PAGE_ATTEMPTS})`;

const OPTIONS = { storage: text(), port: port({ anyFreePort: true }).default(DEFAULT_PORT), attempts: ATTEMPTS_OPTION };

export const viewCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runView });

async function runView({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const logger = commandLogger('info');
  const storage = openCommandStorage(values.storage);
  const redis = await openQueueRedis().catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    logger.warn({ reason }, 'no Redis answers: the retry button is disabled');
    return reason;
  });
  const retry =
    typeof redis === 'string' ? { unavailable: `no Redis to queue it on (${redis})` } : { connection: redisOptions(redis.url, 'client'), attempts: values.attempts };
  const viewer = await startViewerServer({
    port: values.port,
    storage,
    retry,
    logger,
    closeResources: async () => {
      if (typeof redis !== 'string') await redis.close();
    },
  });
  process.stderr.write(`the viewer is at ${viewer.url}viewer/\n`);
  const signal = await shutdownSignal(serverStopMessages('the viewer'));
  logger.info({ signal }, 'stopping the viewer');
  await viewer.close();
  return 0;
}
