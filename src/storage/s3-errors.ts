// Maps what the AWS SDK throws, after its own retries, to a StorageError whose code says what to
// do and whose message names the bucket and endpoint (never credentials) and the next step.
import { StorageError, describeCause } from './storage-error.js';

/** Where a failed S3 operation was going, for the message. */
export interface S3ErrorContext {
  operation: string;
  key: string;
  /** The storage URL, s3://bucket/prefix. */
  url: string;
  bucket: string;
  /** From describeEndpoint: never carries credentials. */
  endpoint: string;
}

/** The fields the SDK sets on its errors. */
interface SdkErrorFields {
  name?: string;
  code?: string;
  cause?: unknown;
  errors?: unknown[];
  $metadata?: { httpStatusCode?: number; attempts?: number };
}

const ACCESS_ERRORS = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken']);
const THROTTLING_ERRORS = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded']);
const TIMEOUT_ERRORS = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);
const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function s3StorageError(error: unknown, context: S3ErrorContext): StorageError {
  if (error instanceof StorageError) return error;
  const fields = (error ?? {}) as SdkErrorFields;
  const { name = '', $metadata: metadata = {} } = fields;
  const status = metadata.httpStatusCode;
  const subject = `${context.operation} ${JSON.stringify(context.key)} in ${context.url}`;
  const options = { key: context.key, cause: error };

  if (name === 'NoSuchBucket') {
    return new StorageError(
      'permanent',
      `${subject}: bucket '${context.bucket}' does not exist at ${context.endpoint}; create it or fix the storage URL`,
      options,
    );
  }
  if (name === 'NoSuchKey' || name === 'NotFound' || status === 404) {
    return new StorageError('not_found', `${subject}: no such object at ${context.endpoint}; check the key and the storage URL`, options);
  }
  if (name === 'CredentialsProviderError') {
    return new StorageError(
      'permanent',
      `${subject}: no AWS credentials found; provide them through the AWS chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, or a container or instance role)`,
      options,
    );
  }
  if (status === 401 || status === 403 || ACCESS_ERRORS.has(name)) {
    return new StorageError(
      'permanent',
      `${subject}: ${context.endpoint} refused access (${name || `HTTP ${status}`}); check the credentials the AWS chain provides and the bucket's permissions`,
      options,
    );
  }
  if (isTransient(error)) {
    // Without attempts the failure came after the SDK's retries ended, e.g. a body cut off mid-stream.
    const { attempts } = metadata;
    const retried = attempts === undefined ? '' : ` after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
    const advice = attempts === undefined ? 'retry later' : 'retry later, or raise maxAttempts (AWS_MAX_ATTEMPTS) to ride out longer outages';
    return new StorageError(
      'transient',
      `${subject} failed${retried}: ${context.endpoint} is unreachable, throttling or failing (${describeCause(error)}); ${advice}`,
      options,
    );
  }
  return new StorageError(
    'permanent',
    `${subject} failed at ${context.endpoint}: ${name && name !== 'Error' ? `${name}: ` : ''}${describeCause(error)}; ` +
      "retrying will not help: check the data being stored, the storage URL and the server's configuration",
    options,
  );
}

/**
 * A conditional PutObject refused because the object is not the one expected: 412 (the condition
 * failed), 409 (a conditional write to the key raced this one), or, when an existing object was
 * expected, 404 (it is gone).
 */
export function isConditionalWriteRefusal(error: unknown, expectedAnObject: boolean): boolean {
  const { name = '', $metadata: metadata = {} } = (error ?? {}) as SdkErrorFields;
  const status = metadata.httpStatusCode;
  if (status === 412 || status === 409 || name === 'PreconditionFailed' || name === 'ConditionalRequestConflict') return true;
  return expectedAnObject && (status === 404 || name === 'NoSuchKey');
}

/** Network errors, timeouts, throttling and 5xx answers: the server may well succeed later. */
function isTransient(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const { name = '', code = '', cause, errors, $metadata: metadata } = error as SdkErrorFields;
  const status = metadata?.httpStatusCode ?? 0;
  return (
    status === 429 ||
    status >= 500 ||
    THROTTLING_ERRORS.has(name) ||
    TIMEOUT_ERRORS.has(name) ||
    NETWORK_ERROR_CODES.has(code) ||
    isTransient(cause, depth + 1) ||
    (errors ?? []).some((inner) => isTransient(inner, depth + 1))
  );
}
