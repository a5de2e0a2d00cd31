// S3 event notifications read into the objects they announce, whichever way they were delivered:
// AWS's `{Records:[…]}` (S3 → SQS, or wrapped by SNS), MinIO's webhook body `{EventName, Key, Records}`,
// MinIO's Redis target in access format (each list entry `[{Event:[…], EventTime}]`), or a plain array
// of records. Only object-created events are kept; keys are decoded the way S3 encodes them.

/** An object that an object-created event announced. */
export interface CreatedObject {
  bucket: string;
  /** The decoded key ('a b+c.pdf', not 'a+b%2Bc.pdf'). */
  key: string;
  /** Absent for buckets without versioning. */
  versionId?: string;
  /** As the event wrote it; absent from some events (copies on some servers). */
  eTag?: string;
  /**
   * Names one upload of the object: bucket, key and versionId, or without a version bucket, key and
   * eTag. Absent when the event has neither: such an event cannot be told apart from a later upload.
   */
  uploadId?: string;
}

export interface S3Notification {
  /** Each object once, in the order of their first event. */
  created: CreatedObject[];
  /** Events that create nothing to read: removals, tagging, retention, test events, folder placeholders. */
  ignored: number;
  /** Records that could not be read, each with why; the other records still count. */
  malformed: string[];
}

/** The message as a whole is not an S3 event notification in any known form. */
export class S3NotificationError extends Error {
  override readonly name = 'S3NotificationError';
}

/** ObjectCreated events that change tags or locks, not the bytes: nothing new to read. */
const METADATA_ONLY_EVENTS = new Set(['PutRetention', 'PutLegalHold', 'PutTagging', 'DeleteTagging']);

/** SNS inside a message inside an array, and so on: deeper than any real delivery nests. */
const MAX_NESTING = 4;

/** Reads a notification from its JSON text; throws S3NotificationError if it is no notification at all. */
export function readS3Notification(text: string): S3Notification {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new S3NotificationError(`the message is not JSON: ${(error as Error).message}`);
  }
  return s3NotificationOf(value);
}

/** The same for an already parsed message. */
export function s3NotificationOf(value: unknown): S3Notification {
  const notification: S3Notification = { created: [], ignored: 0, malformed: [] };
  const seen = new Set<string>();
  const add = (object: CreatedObject) => {
    if (object.uploadId !== undefined) {
      if (seen.has(object.uploadId)) return;
      seen.add(object.uploadId);
    }
    notification.created.push(object);
  };
  if (!collect(value, 0, add, notification)) {
    throw new S3NotificationError(`not an S3 event notification: expected {"Records":[…]}, MinIO's [{"Event":[…]}] or an SNS notification, got ${preview(value)}`);
  }
  return notification;
}

/**
 * Walks one value of the message; returns false when its shape is none of the known ones (then the
 * caller decides whether that is the whole message's fault or one record's).
 */
function collect(value: unknown, depth: number, add: (object: CreatedObject) => void, notification: S3Notification): boolean {
  if (depth > MAX_NESTING) return false;
  if (Array.isArray(value)) {
    if (value.length === 0) return false;
    for (const item of value) {
      if (!collect(item, depth + 1, add, notification)) notification.malformed.push(`not an event record: ${preview(item)}`);
    }
    return true;
  }
  if (!isObject(value)) return false;
  if (Array.isArray(value.Records)) {
    for (const record of value.Records) readRecord(record, add, notification);
    return true;
  }
  // MinIO's Redis access format: {Event: [records], EventTime}.
  if (Array.isArray(value.Event)) {
    for (const record of value.Event) readRecord(record, add, notification);
    return true;
  }
  // The test message S3 sends when a notification is configured: {"Service":"Amazon S3","Event":"s3:TestEvent",…}.
  if (value.Event === 's3:TestEvent') {
    notification.ignored++;
    return true;
  }
  // S3 → SNS → SQS: the S3 message is the JSON text in Message.
  if (value.Type === 'Notification' && typeof value.Message === 'string') {
    let message: unknown;
    try {
      message = JSON.parse(value.Message);
    } catch {
      return false;
    }
    return collect(message, depth + 1, add, notification);
  }
  if (typeof value.eventName === 'string') {
    readRecord(value, add, notification);
    return true;
  }
  return false;
}

function readRecord(record: unknown, add: (object: CreatedObject) => void, notification: S3Notification): void {
  if (!isObject(record) || typeof record.eventName !== 'string') {
    notification.malformed.push(`a record without eventName: ${preview(record)}`);
    return;
  }
  if (!isObjectCreated(record.eventName)) {
    notification.ignored++;
    return;
  }
  const s3 = isObject(record.s3) ? record.s3 : {};
  const bucket = isObject(s3.bucket) ? s3.bucket.name : undefined;
  const object = isObject(s3.object) ? s3.object : {};
  if (typeof bucket !== 'string' || bucket === '' || typeof object.key !== 'string' || object.key === '') {
    notification.malformed.push(`a ${record.eventName} record without s3.bucket.name and s3.object.key: ${preview(record)}`);
    return;
  }
  let key: string;
  try {
    key = decodeS3EventKey(object.key);
  } catch {
    notification.malformed.push(`a ${record.eventName} record whose key is not URL-encoded: ${JSON.stringify(object.key)}`);
    return;
  }
  // Consoles create 'folder/' objects to show empty folders; they hold no document.
  if (key.endsWith('/')) {
    notification.ignored++;
    return;
  }
  const created: CreatedObject = { bucket, key };
  if (typeof object.versionId === 'string' && object.versionId !== '' && object.versionId !== 'null') created.versionId = object.versionId;
  if (typeof object.eTag === 'string' && object.eTag !== '') created.eTag = object.eTag;
  const upload = created.versionId !== undefined ? `version ${created.versionId}` : created.eTag !== undefined ? `etag ${created.eTag}` : undefined;
  if (upload !== undefined) created.uploadId = JSON.stringify([bucket, key, upload]);
  add(created);
}

/** 'ObjectCreated:Put' (AWS) and 's3:ObjectCreated:Put' (MinIO), except the events that only change metadata. */
export function isObjectCreated(eventName: string): boolean {
  const match = /^(?:s3:)?ObjectCreated:(.+)$/.exec(eventName);
  return match !== null && !METADATA_ONLY_EVENTS.has(match[1]);
}

/**
 * Event keys are URL-encoded as in an HTML form: '+' is a space and everything else is percent-encoded
 * ('a%20b+c.pdf' and 'a+b+c.pdf' are both 'a b c.pdf'; a '+' in the name arrives as '%2B').
 * Throws URIError on a broken percent sequence.
 */
export function decodeS3EventKey(encoded: string): string {
  return decodeURIComponent(encoded.replace(/\+/g, ' '));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The start of a value, for messages. */
function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
