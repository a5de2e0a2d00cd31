// Events from an SQS queue that S3 notifies (directly, or through an SNS topic): long-polled, and each
// message deleted only once its documents are enqueued. A message whose enqueue failed stays in the
// queue and comes back after its visibility timeout; one that is no notification at all is left for
// the queue's redrive policy (its dead-letter queue) rather than deleted. S3's test message, sent when
// the notification is configured, is deleted without effect.
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';

import { RetryDelay } from './retry-delay.js';
import { S3NotificationError } from './s3-notifications.js';
import type { S3EventEnqueuer } from './s3-event-enqueuer.js';

/** SQS's longest long poll. Default for waitSeconds. */
export const MAX_WAIT_SECONDS = 20;
/** SQS's most messages per receive. */
const MAX_MESSAGES = 10;

export interface SqsSourceOptions {
  /** https://sqs.<region>.amazonaws.com/<account>/<queue>, or the queue's URL on an SQS-compatible server. */
  queueUrl: string;
  /** The SQS endpoint. Default: the SDK's (AWS_ENDPOINT_URL_SQS, else the region's; requests go to the queue URL's host). */
  endpoint?: string;
  /** Default: AWS_REGION, else the region in an AWS queue URL, else us-east-1. */
  region?: string;
  enqueuer: Pick<S3EventEnqueuer, 'enqueueNotification'>;
  logger: Logger;
  /** Seconds one receive waits for messages (0–20). Default MAX_WAIT_SECONDS. */
  waitSeconds?: number;
}

export interface SqsSource {
  /** Stops polling, finishes the messages in hand and closes the client. */
  close(): Promise<void>;
}

export function startSqsSource(options: SqsSourceOptions): SqsSource {
  const { queueUrl, enqueuer } = options;
  const logger = options.logger.child({ source: 'sqs', queue: queueUrl });
  const client = new SQSClient({ region: options.region ?? sqsRegionOf(queueUrl), endpoint: options.endpoint });
  const waitSeconds = options.waitSeconds ?? MAX_WAIT_SECONDS;
  const stop = new AbortController();
  const delay = new RetryDelay();

  /** 'retry': the message comes back after its visibility timeout, and the next receive waits a while. */
  async function handle(message: Message): Promise<'done' | 'retry'> {
    const log = logger.child({ messageId: message.MessageId });
    try {
      await enqueuer.enqueueNotification(message.Body ?? '', log);
    } catch (error) {
      if (error instanceof S3NotificationError) {
        log.error({ reason: error.message }, 'a message that is no S3 event notification stays in the queue for its redrive policy');
        return 'done';
      }
      log.error({ err: error }, 'enqueueing failed; the message stays in the queue and comes back after its visibility timeout');
      return 'retry';
    }
    try {
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
      return 'done';
    } catch (error) {
      // Enqueued already: when the message comes back, enqueueing it again adds nothing.
      log.error({ err: error }, 'cannot delete the message after enqueueing its documents; it will come back');
      return 'retry';
    }
  }

  async function receive(): Promise<Message[] | undefined> {
    try {
      const received = await client.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: MAX_MESSAGES, WaitTimeSeconds: waitSeconds }),
        { abortSignal: stop.signal },
      );
      return received.Messages ?? [];
    } catch (error) {
      if (stop.signal.aborted) return undefined;
      logger.error({ err: error, retryInMs: delay.nextMs }, 'cannot receive messages');
      await delay.wait(stop.signal);
      return undefined;
    }
  }

  async function run(): Promise<void> {
    while (!stop.signal.aborted) {
      const messages = await receive();
      if (messages === undefined) continue;
      // Messages in hand are finished even when stopping: enqueueing one takes moments.
      let retries = 0;
      for (const message of messages) if ((await handle(message)) === 'retry') retries++;
      if (retries === 0) delay.reset();
      else await delay.wait(stop.signal);
    }
  }

  logger.info({ waitSeconds }, 'polling the queue for event notifications');
  const running = run();
  return {
    async close() {
      stop.abort();
      await running;
      client.destroy();
    },
  };
}

/** AWS_REGION, else the region of https://sqs.<region>.amazonaws.com/…, else us-east-1. */
export function sqsRegionOf(queueUrl: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.AWS_REGION?.trim();
  if (fromEnv) return fromEnv;
  try {
    return /^sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/.exec(new URL(queueUrl).hostname)?.[1] ?? 'us-east-1';
  } catch {
    return 'us-east-1';
  }
}
