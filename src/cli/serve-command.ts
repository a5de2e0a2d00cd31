// `scriptorium serve`: the HTTP API (submit, follow, fetch results, cancel), its OpenAPI document,
// the queue dashboard and the page viewer, behind API keys, until SIGTERM or SIGINT.
import { parseApiKeys, API_KEYS_FORMAT } from '../server/api-keys.js';
import { DEFAULT_MAX_DOCUMENT_BYTES, startApiServer } from '../server/api-server.js';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.js';
import { commandLogger } from './cli-logger.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { DOCUMENT_LIMIT_OPTIONS, MAX_QUEUED_PAGES_OPTION, MAX_QUEUED_PAGES_USAGE, QUEUE_TARGET_OPTIONS, variantOf } from './enqueue-args.js';
import { openQueueRedis } from './queue-redis.js';
import { serverStopMessages, shutdownSignal } from './shutdown-signals.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { integer, port, text } from './options.js';
import { UsageError } from './usage.js';
import { DEFAULT_PAGE_ATTEMPTS } from '../queue/job-options.js';

const MIB = 1024 * 1024;
const DEFAULT_PORT = 8080;

const USAGE = `Usage: scriptorium serve [--host H] [--port P] [--to URL] [--model DIR | --variant v1|v2|v3] [--attempts N]
                        [--max-document-mb N] [--max-document-pages N] [--rate-limit N] [--max-queued-pages N]

Serves the HTTP API at http://H:P/: POST /v1/documents (an upload, an s3:// URI or an allowed https
URL), GET /v1/documents/{docId} (status), …/result and …/pages/{page} (results), DELETE (cancel);
/openapi.json describes it all, /dashboard is the queue dashboard, /viewer/ the page viewer (a browser
signs in once with a key at /viewer/login and gets a session cookie). Documents are queued on Redis
($REDIS_URL, default redis://127.0.0.1:6379) for \`scriptorium work\` processes using the same storage.

Every request but GET /healthz and GET /readyz needs an API key (Authorization: Bearer KEY). Keys are
configured hashed in $SCRIPTORIUM_API_KEYS: ${API_KEYS_FORMAT}.
A key's class orders its work (interactive before bulk); pages-per-day and in-flight (documents not
yet settled) are its quotas, shared by every server on the same Redis: beyond one a submission is
answered 429 naming it. Beyond --max-queued-pages, too, submissions are answered 429, and 503 while
Redis has used 90% of its maxmemory, each with Retry-After; GET /v1/capacity says where they stand.
$SCRIPTORIUM_FETCH_HOSTS lists (comma-separated) the hosts whose https URLs may be submitted (none by default).
Callbacks: with $SCRIPTORIUM_CALLBACK_SECRET set, a submission's callbackUrl (to a host that
$SCRIPTORIUM_CALLBACK_HOSTS lists) receives one POST when the document settles, signed with
X-Scriptorium-Signature: sha256=<hex HMAC-SHA256 of the body>, retried with backoff until answered 2xx.

  --host H            address to listen on (default 127.0.0.1)
  --port P            port to listen on (default ${DEFAULT_PORT})
  --to URL            storage for sources and results: ${STORAGE_URL_USAGE}
  --model DIR         the checkpoint workers run, to take the default variant from (default $SCRIPTORIUM_MODEL,
                      else the synthetic tiny V3 checkpoint); --variant names it instead
  --attempts N        tries per page before it is recorded as failed (default ${DEFAULT_PAGE_ATTEMPTS})
  --max-document-mb N largest document accepted, uploaded, fetched or named by s3:// URI (default
                      $SCRIPTORIUM_MAX_DOCUMENT_MB, else ${DEFAULT_MAX_DOCUMENT_BYTES / MIB})
  --max-document-pages N
                      documents of more pages are refused with the reason (default
                      $SCRIPTORIUM_MAX_DOCUMENT_PAGES, else no limit)
  --rate-limit N      requests per minute per API key (default ${DEFAULT_RATE_LIMIT.requests})
${MAX_QUEUED_PAGES_USAGE}`;

const OPTIONS = {
  host: text().default('127.0.0.1'),
  port: port({ anyFreePort: true }).default(DEFAULT_PORT),
  ...QUEUE_TARGET_OPTIONS,
  'max-document-mb': DOCUMENT_LIMIT_OPTIONS['max-document-mb'].default(DEFAULT_MAX_DOCUMENT_BYTES / MIB),
  'max-document-pages': DOCUMENT_LIMIT_OPTIONS['max-document-pages'],
  'rate-limit': integer({ min: 1 }).default(DEFAULT_RATE_LIMIT.requests),
  'max-queued-pages': MAX_QUEUED_PAGES_OPTION,
};

export const serveCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runServe });

async function runServe({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  let apiKeys;
  try {
    apiKeys = parseApiKeys(process.env.SCRIPTORIUM_API_KEYS ?? '');
  } catch (error) {
    throw new UsageError(`SCRIPTORIUM_API_KEYS: ${(error as Error).message}`);
  }
  const defaultVariant = await variantOf(values);
  const fetchHosts = listFromEnv('SCRIPTORIUM_FETCH_HOSTS');
  const callbackSecret = process.env.SCRIPTORIUM_CALLBACK_SECRET ?? '';
  const callbacks = callbackSecret === '' ? undefined : { secret: callbackSecret, hosts: listFromEnv('SCRIPTORIUM_CALLBACK_HOSTS') };

  const logger = commandLogger('info');
  const redis = await openQueueRedis();
  try {
    const server = await startApiServer({
      host: values.host,
      port: values.port,
      redisUrl: redis.url,
      storage: openCommandStorage(values.to),
      apiKeys,
      rateLimit: { requests: values['rate-limit'], windowMs: DEFAULT_RATE_LIMIT.windowMs },
      maxDocumentBytes: values['max-document-mb'] * MIB,
      maxDocumentPages: values['max-document-pages'],
      defaultVariant,
      attempts: values.attempts,
      fetchHosts,
      callbacks,
      maxQueuedPages: values['max-queued-pages'],
      logger,
    });
    const signal = await shutdownSignal(serverStopMessages('the API server'));
    logger.info({ signal }, 'stopping the API server');
    await server.close();
    return 0;
  } finally {
    await redis.close();
  }
}

function listFromEnv(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
