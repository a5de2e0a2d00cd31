// S3 event notifications for the watch tests: records shaped as AWS and MinIO write them, and a relay
// that delivers s3rver's notifications the way MinIO's Redis target does.
import { Redis } from 'ioredis';

import type { S3rverNotification, S3Server } from './s3-server.js';

/** Keys in notifications are URL-encoded as in an HTML form: 'a b+c.pdf' arrives as 'a+b%2Bc.pdf'. */
export function encodeS3EventKey(key: string): string {
  return encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/');
}

export interface RecordFields {
  /** Already encoded, as it appears in the event. */
  key: string;
  bucket?: string;
  eTag?: string;
  versionId?: string;
}

/** One record as S3 (and MinIO, with the 's3:' prefix) writes it. */
export function eventRecord(eventName: string, fields: RecordFields): Record<string, unknown> {
  const object: Record<string, unknown> = { key: fields.key, size: 1024, sequencer: '0055AED6DCD90281E5' };
  if (fields.eTag !== undefined) object.eTag = fields.eTag;
  if (fields.versionId !== undefined) object.versionId = fields.versionId;
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: '2024-05-01T12:00:00.000Z',
    eventName,
    userIdentity: { principalId: 'AWS:EXAMPLE' },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: 'scriptorium',
      bucket: { name: fields.bucket ?? 'inbox', arn: `arn:aws:s3:::${fields.bucket ?? 'inbox'}` },
      object,
    },
  };
}

/** An object-created notification for each key, as S3 sends it to SQS: {"Records":[…]}. */
export function createdNotification(bucket: string, keys: Array<{ key: string; eTag?: string }>): string {
  return JSON.stringify({ Records: keys.map(({ key, eTag }) => eventRecord('ObjectCreated:Put', { bucket, key: encodeS3EventKey(key), eTag })) });
}

/** s3rver's notification with its keys encoded as S3 and MinIO encode them. */
export function asS3Notification(notification: S3rverNotification): S3rverNotification {
  return {
    Records: notification.Records.map((record) => ({
      ...record,
      eventName: `s3:${record.eventName}`,
      s3: { ...record.s3, object: { ...record.s3.object, key: encodeS3EventKey(record.s3.object.key) } },
    })),
  };
}

/** One entry as MinIO's Redis target in access format pushes it: [{"Event":[records],"EventTime":…}]. */
export function minioAccessEntry(notification: S3rverNotification): string {
  const { Records } = asS3Notification(notification);
  return JSON.stringify([{ Event: Records, EventTime: Records[0]?.eventTime }]);
}

export interface NotificationRelay {
  /** Resolves once every notification emitted so far is on the list; rejects if a push failed. */
  delivered(): Promise<void>;
  /** Stops relaying and closes the connection. */
  close(): Promise<void>;
}

/** RPUSHes each notification s3rver emits onto `listKey`, in order, as MinIO would. */
export function relayToRedisList(s3: S3Server, redisUrl: string, listKey: string): NotificationRelay {
  const redis = new Redis(redisUrl);
  let closed = false;
  let tail: Promise<unknown> = Promise.resolve();
  s3.onNotification((notification) => {
    if (closed) return;
    tail = tail.then(() => redis.rpush(listKey, minioAccessEntry(notification)));
  });
  return {
    delivered: () => tail.then(() => undefined),
    async close() {
      closed = true;
      await tail.catch(() => undefined);
      await redis.quit();
    },
  };
}
