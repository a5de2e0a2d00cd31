// `scriptorium watch`: objects dropped into a bucket become queued documents, with no enqueue run by
// hand. S3 event notifications arrive from one source (a Redis list that MinIO fills, an HTTP webhook,
// or an SQS queue); each new object is enqueued exactly as `scriptorium enqueue s3://bucket/key` would.
import { QueueCapacity } from '../queue/queue-capacity.js';
import { checkRedisReachable } from '../queue/redis.js';
import { S3EventEnqueuer } from '../watch/s3-event-enqueuer.js';
import { startRedisListSource } from '../watch/redis-list-source.js';
import { startSqsSource } from '../watch/sqs-source.js';
import { EVENTS_PATH, startWebhookSource } from '../watch/webhook-source.js';
import { commandLogger } from './cli-logger.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ENQUEUE_ARGS_USAGE, ENQUEUE_OPTIONS, enqueueSettingsOf, MAX_QUEUED_PAGES_OPTION, MAX_QUEUED_PAGES_USAGE } from './enqueue-args.js';
import { openQueueRedis } from './queue-redis.js';
import { shutdownSignal } from './shutdown-signals.js';
import { httpUrl, port, text } from './options.js';
import { UsageError } from './usage.js';

export const WEBHOOK_SECRET_ENV = 'SCRIPTORIUM_WEBHOOK_SECRET';

const USAGE = `Usage: scriptorium watch (--redis-list KEY [--events-redis URL]
                         | --webhook-port P [--webhook-host H]
                         | --sqs-queue URL [--sqs-endpoint URL] [--sqs-region R])
                        [--to URL] [--model DIR | --variant v1|v2|v3] [--task T] [--mode M] [--dpi N | --longest-side PX]
                        [--max-tokens N] [--password-env NAME | --password P] [--priority N] [--attempts N]
                        [--max-queued-pages N]

Enqueues every object an S3 event notification announces as created, exactly as
\`scriptorium enqueue s3://bucket/key\` would (Redis: $REDIS_URL, default redis://127.0.0.1:6379).
An event is acknowledged only once its documents are enqueued; a failed enqueue is retried, and so
is a document without room in its page queue (--max-queued-pages) or in Redis's memory.
Ignored: events other than object creation, folder placeholders ('name/'), objects under the
storage's own staging/, results/ and rejected/, and uploads enqueued in the last hour.
Runs until SIGTERM or SIGINT. Logs are JSON lines on stderr ($LOG_LEVEL, default info).

One source of events:
  --redis-list KEY     a Redis list that MinIO's Redis target fills (format=access); entries in hand
                       wait in KEY:processing, entries that are no notification go to KEY:malformed
  --events-redis URL   the Redis holding that list (default: the queue's Redis)
  --webhook-port P     an HTTP endpoint: POST ${EVENTS_PATH} with the notification JSON (MinIO's webhook
                       target, or any sender), GET /healthz. Requests must carry
                       Authorization: Bearer <secret> (MinIO's auth_token) or
                       X-Scriptorium-Signature: sha256=<HMAC-SHA256 of the body with the secret, hex>;
                       the secret is $${WEBHOOK_SECRET_ENV}
  --webhook-host H     address to listen on (default 127.0.0.1)
  --sqs-queue URL      an SQS queue that S3 notifies, directly or through SNS
  --sqs-endpoint URL   SQS endpoint, for SQS-compatible servers (default: the SDK's)
  --sqs-region R       default $AWS_REGION, else the region in the queue URL, else us-east-1

How documents are queued, as for \`scriptorium enqueue\`:
${ENQUEUE_ARGS_USAGE}
${MAX_QUEUED_PAGES_USAGE}`;

const OPTIONS = {
  'redis-list': text(),
  'events-redis': text(),
  'webhook-port': port({ anyFreePort: false }),
  'webhook-host': text(),
  'sqs-queue': httpUrl(),
  'sqs-endpoint': httpUrl(),
  'sqs-region': text(),
  ...ENQUEUE_OPTIONS,
  'max-queued-pages': MAX_QUEUED_PAGES_OPTION,
};

/** Each source's own options, refused with another source. */
const SOURCE_OPTIONS = { 'redis-list': ['events-redis'], 'webhook-port': ['webhook-host'], 'sqs-queue': ['sqs-endpoint', 'sqs-region'] } as const;

export const watchCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runWatch });

async function runWatch({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const sources = (Object.keys(SOURCE_OPTIONS) as (keyof typeof SOURCE_OPTIONS)[]).filter((name) => values[name] !== undefined);
  if (sources.length !== 1) throw new UsageError('give one source of events: --redis-list, --webhook-port or --sqs-queue');
  for (const [other, own] of Object.entries(SOURCE_OPTIONS)) {
    const stray = other === sources[0] ? undefined : own.find((name) => values[name] !== undefined);
    if (stray !== undefined) throw new UsageError(`--${stray} goes with --${other}`);
  }
  const { 'redis-list': listKey, 'webhook-host': webhookHost, 'webhook-port': webhookPort, 'sqs-queue': sqsQueue, 'sqs-endpoint': sqsEndpoint } = values;
  const webhookSecret = process.env[WEBHOOK_SECRET_ENV] ?? '';
  if (webhookPort !== undefined && webhookSecret === '') {
    throw new UsageError(`set ${WEBHOOK_SECRET_ENV} to the webhook's secret: an endpoint without one would let anyone queue work`);
  }
  const enqueue = await enqueueSettingsOf(values);

  const logger = commandLogger('info');
  const redis = await openQueueRedis();
  const capacity = new QueueCapacity(redis.url, values['max-queued-pages']);
  const enqueuer = new S3EventEnqueuer({ enqueue, redisUrl: redis.url, logger, capacity });
  try {
    let watching: { close(): Promise<void> };
    if (listKey !== undefined) {
      const eventsRedis = values['events-redis'] ?? redis.url;
      await checkRedisReachable(eventsRedis);
      watching = await startRedisListSource({ redisUrl: eventsRedis, listKey, enqueuer, logger });
    } else if (webhookPort !== undefined) {
      watching = await startWebhookSource({ host: webhookHost, port: webhookPort, secret: webhookSecret, enqueuer, logger });
    } else {
      watching = startSqsSource({ queueUrl: sqsQueue!, endpoint: sqsEndpoint, region: values['sqs-region'], enqueuer, logger });
    }
    logger.info({ redis: redis.description, storage: enqueue.storage.url, ocr: enqueue.ocr }, 'watching for new objects');
    const signal = await shutdownSignal();
    logger.info({ signal }, 'stopping: finishing the event in hand');
    await watching.close();
    logger.info('stopped');
    return 0;
  } finally {
    await enqueuer.close();
    await capacity.close();
    await redis.close();
  }
}
