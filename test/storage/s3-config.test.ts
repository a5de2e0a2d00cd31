// S3 settings: options first, then the environment, then defaults that depend on whether a custom
// endpoint (MinIO, s3rver) is in use.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { describeEndpoint, resolveS3Config } from '../../src/storage/s3-config.js';

const MIB = 1024 * 1024;

test('with no options and an empty environment, AWS S3 in us-east-1 with the SDK defaults is used', () => {
  assert.deepEqual(resolveS3Config({}, {}), {
    endpoint: undefined,
    region: 'us-east-1',
    forcePathStyle: false,
    requestChecksumCalculation: undefined,
    responseChecksumValidation: undefined,
    maxAttempts: undefined,
    retryMode: undefined,
    partSizeBytes: 8 * MIB,
    uploadQueueSize: 4,
    connectionTimeoutMs: 5000,
    socketTimeoutMs: 120_000,
  });
});

test('S3_ENDPOINT wins over AWS_ENDPOINT_URL_S3, which wins over AWS_ENDPOINT_URL', () => {
  const env = { S3_ENDPOINT: 'http://a:9000', AWS_ENDPOINT_URL_S3: 'http://b:9000', AWS_ENDPOINT_URL: 'http://c:9000' };
  assert.equal(resolveS3Config({}, env).endpoint, 'http://a:9000');
  assert.equal(resolveS3Config({}, { ...env, S3_ENDPOINT: '' }).endpoint, 'http://b:9000');
  assert.equal(resolveS3Config({}, { AWS_ENDPOINT_URL: 'http://c:9000' }).endpoint, 'http://c:9000');
});

test('the endpoint option wins over the environment', () => {
  assert.equal(resolveS3Config({ endpoint: 'http://127.0.0.1:4568' }, { S3_ENDPOINT: 'http://a:9000' }).endpoint, 'http://127.0.0.1:4568');
});

test('a custom endpoint defaults to path-style addressing and WHEN_REQUIRED checksums', () => {
  const config = resolveS3Config({ endpoint: 'http://minio:9000' }, {});
  assert.equal(config.forcePathStyle, true);
  assert.equal(config.requestChecksumCalculation, 'WHEN_REQUIRED');
  assert.equal(config.responseChecksumValidation, 'WHEN_REQUIRED');
});

test('S3_FORCE_PATH_STYLE=false turns path-style off for a custom endpoint', () => {
  assert.equal(resolveS3Config({}, { S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'false' }).forcePathStyle, false);
});

test('checksum options override the custom-endpoint default', () => {
  const config = resolveS3Config({ endpoint: 'http://minio:9000', requestChecksumCalculation: 'WHEN_SUPPORTED' }, {});
  assert.equal(config.requestChecksumCalculation, 'WHEN_SUPPORTED');
});

test('AWS_REQUEST_CHECKSUM_CALCULATION overrides the custom-endpoint default', () => {
  const env = { S3_ENDPOINT: 'http://minio:9000', AWS_REQUEST_CHECKSUM_CALCULATION: 'when_supported' };
  assert.equal(resolveS3Config({}, env).requestChecksumCalculation, 'WHEN_SUPPORTED');
});

test('AWS_REGION sets the region', () => {
  assert.equal(resolveS3Config({}, { AWS_REGION: 'eu-central-1' }).region, 'eu-central-1');
});

test('an S3_FORCE_PATH_STYLE that is not a boolean is rejected, naming the variable', () => {
  assert.throws(() => resolveS3Config({}, { S3_FORCE_PATH_STYLE: 'maybe' }), {
    name: 'StorageError',
    code: 'permanent',
    message: "S3_FORCE_PATH_STYLE must be 'true' or 'false', not 'maybe'",
  });
});

test('a part size under 5 MiB is rejected', () => {
  assert.throws(() => resolveS3Config({ partSizeBytes: 1024 }, {}), { code: 'permanent', message: /partSizeBytes must be an integer of at least 5242880/ });
});

test('an endpoint that is not a URL is rejected, naming where it came from', () => {
  assert.throws(() => resolveS3Config({}, { AWS_ENDPOINT_URL: 'minio:9000/' }), { code: 'permanent', message: /from AWS_ENDPOINT_URL must be an http/ });
  assert.throws(() => resolveS3Config({}, { S3_ENDPOINT: 'not a url' }), { code: 'permanent', message: /from S3_ENDPOINT is not a URL/ });
});

test('an endpoint carrying a password is rejected without repeating it', () => {
  assert.throws(
    () => resolveS3Config({ endpoint: 'http://admin:hunter2@minio:9000' }, {}),
    (error: Error) => error.message.includes('user name or password') && !error.message.includes('hunter2'),
  );
});

test('describeEndpoint names AWS S3 and its region when no endpoint is set', () => {
  assert.equal(describeEndpoint({ endpoint: undefined, region: 'eu-west-1' }), 'AWS S3 (region eu-west-1)');
  assert.equal(describeEndpoint({ endpoint: 'http://127.0.0.1:9000/', region: 'us-east-1' }), 'http://127.0.0.1:9000');
});
