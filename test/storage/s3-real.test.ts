// What a real S3 does that the in-process test server may not: these run against one
// (SCRIPTORIUM_TEST_S3_URL, set by `npm run test:integration -- --against minio|aws`, under that
// run's fresh prefix), else against MinIO in a container where a container runtime answers
// (test-services.ts), and are skipped otherwise. The storage contract runs there too.
import assert from 'node:assert/strict';
import { createHash, randomFillSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { S3Storage } from '../../src/storage/s3-storage.js';
import { StorageError } from '../../src/storage/storage-error.js';
import { startMinioContainer, TEST_SERVICES, useMinioCredentials, type ContainerServer } from '../support/test-services.js';

const givenUrl = process.env.SCRIPTORIUM_TEST_S3_URL;
const MIB = 1024 * 1024;
const skip =
  givenUrl === undefined && TEST_SERVICES.source === 'local'
    ? 'needs a real S3: a container runtime for MinIO, or npm run test:integration -- --against minio|aws'
    : false;

describe('a real S3', { skip }, () => {
  let url: string;
  let minio: ContainerServer | undefined;
  let storage: S3Storage;
  before(async () => {
    if (givenUrl === undefined) {
      minio = await startMinioContainer(['scriptorium-test']);
      useMinioCredentials();
      process.env.S3_ENDPOINT = minio.url;
      url = 's3://scriptorium-test';
    } else {
      url = givenUrl;
    }
    storage = new S3Storage(`${url}/s3-real`);
  });
  after(async () => {
    for await (const { key } of storage.list('', { recursive: true })) await storage.delete(key);
    storage.destroy();
    await minio?.close();
  });

  test('a result larger than a part is uploaded in parts and read back whole', async () => {
    const bytes = randomFillSync(Buffer.alloc(20 * MIB)); // the default part is 8 MiB: three parts
    await storage.put('large/result.bin', bytes);
    const [listed] = await listAll(storage, 'large/');
    assert.match(listed.etag ?? '', /-3"$/, 'the ETag of an object uploaded in 3 parts');
    const got = await storage.get('large/result.bin');
    assert.equal(createHash('sha256').update(got).digest('hex'), createHash('sha256').update(bytes).digest('hex'));
  });

  test('an object is listed and read as soon as its put has returned', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `fresh/${String(i).padStart(2, '0')}.json`);
    for (const key of keys) {
      await storage.put(key, Buffer.from(`{"key":"${key}"}`));
      assert.equal((await storage.get(key)).toString(), `{"key":"${key}"}`);
    }
    assert.deepEqual((await listAll(storage, 'fresh/')).map(({ key }) => key), keys);
  });

  test('refused credentials are a permanent error naming the endpoint, never the secret', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY, token: process.env.AWS_SESSION_TOKEN };
    const secret = 'not-a-secret-anyone-has-0123456789';
    process.env.AWS_ACCESS_KEY_ID = 'AKIAIOSFODNN7INVALID';
    process.env.AWS_SECRET_ACCESS_KEY = secret;
    delete process.env.AWS_SESSION_TOKEN;
    const refused = new S3Storage(`${url}/s3-real`);
    try {
      await assert.rejects(refused.get('never/there'), (error: unknown) => {
        assert.ok(error instanceof StorageError, String(error));
        assert.equal(error.code, 'permanent', error.message);
        assert.match(error.message, /refused access/);
        assert.doesNotMatch(error.message, new RegExp(secret));
        return true;
      });
    } finally {
      refused.destroy();
      restore('AWS_ACCESS_KEY_ID', saved.id);
      restore('AWS_SECRET_ACCESS_KEY', saved.secret);
      restore('AWS_SESSION_TOKEN', saved.token);
    }
  });
});

async function listAll(storage: S3Storage, prefix: string) {
  const listed = [];
  for await (const object of storage.list(prefix, { recursive: true })) listed.push(object);
  return listed;
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
