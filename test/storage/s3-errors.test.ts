// How errors the AWS SDK throws (after its retries) map to StorageError codes and messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { isConditionalWriteRefusal, s3StorageError, type S3ErrorContext } from '../../src/storage/s3-errors.js';

const context: S3ErrorContext = {
  operation: 'get',
  key: 'a/b.txt',
  url: 's3://bucket/prefix',
  bucket: 'bucket',
  endpoint: 'http://minio:9000',
};

function sdkError(name: string, status: number | undefined, extra: object = {}) {
  return Object.assign(new Error(`${name} from the server`), { name, $metadata: { httpStatusCode: status, attempts: 3 } }, extra);
}

for (const [name, status, code] of [
  ['NoSuchKey', 404, 'not_found'],
  ['NotFound', 404, 'not_found'],
  ['NoSuchBucket', 404, 'permanent'],
  ['AccessDenied', 403, 'permanent'],
  ['InvalidAccessKeyId', 403, 'permanent'],
  ['SlowDown', 503, 'transient'],
  ['ServiceUnavailable', 503, 'transient'],
  ['InternalError', 500, 'transient'],
  ['TooManyRequests', 429, 'transient'],
  ['TimeoutError', undefined, 'transient'],
  ['InvalidArgument', 400, 'permanent'],
] as const) {
  test(`${name}${status === undefined ? '' : ` (HTTP ${status})`} maps to ${code}`, () => {
    assert.equal(s3StorageError(sdkError(name, status), context).code, code);
  });
}

for (const [name, status, expectedAnObject, refused] of [
  ['PreconditionFailed', 412, false, true],
  ['PreconditionFailed', 412, true, true],
  ['ConditionalRequestConflict', 409, false, true],
  ['NoSuchKey', 404, true, true],
  ['NoSuchKey', 404, false, false],
  ['SlowDown', 503, true, false],
  ['AccessDenied', 403, false, false],
] as const) {
  test(`a conditional put answered ${name} (HTTP ${status}) ${refused ? 'is' : 'is not'} a refusal when ${expectedAnObject ? 'an object' : 'none'} was expected`, () => {
    assert.equal(isConditionalWriteRefusal(sdkError(name, status), expectedAnObject), refused);
  });
}

test('a refused connection maps to transient, with the attempts and the endpoint in the message', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:9000'), { code: 'ECONNREFUSED', $metadata: { attempts: 5 } });
  const error = s3StorageError(refused, context);
  assert.equal(error.code, 'transient');
  assert.match(error.message, /^get "a\/b.txt" in s3:\/\/bucket\/prefix failed after 5 attempts: http:\/\/minio:9000 is unreachable/);
});

test('a network error wrapped as the cause of another error maps to transient', () => {
  const wrapped = new Error('socket hang up', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) });
  assert.equal(s3StorageError(wrapped, context).code, 'transient');
});

test('a missing bucket says to create it or fix the URL', () => {
  assert.equal(
    s3StorageError(sdkError('NoSuchBucket', 404), context).message,
    "get \"a/b.txt\" in s3://bucket/prefix: bucket 'bucket' does not exist at http://minio:9000; create it or fix the storage URL",
  );
});

test('missing credentials point at the AWS credential chain', () => {
  const error = s3StorageError(sdkError('CredentialsProviderError', undefined), context);
  assert.equal(error.code, 'permanent');
  assert.match(error.message, /no AWS credentials found; provide them through the AWS chain \(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
});

test('the original SDK error is kept as the cause', () => {
  const original = sdkError('SlowDown', 503);
  assert.equal(s3StorageError(original, context).cause, original);
});
