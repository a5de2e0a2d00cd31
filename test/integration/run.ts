// `npm run test:integration -- --against minio|aws`: the storage contract (test/storage/contract.test.ts)
// and the S3 behaviours a local fake server hides (test/storage/s3-real.test.ts), run against a real
// S3: a MinIO server someone runs or one started in a container, or AWS S3 with the caller's
// credentials. The tests write under a fresh prefix below --url and remove what they wrote.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

import { defineCommand, type CommandLine } from '../../src/cli/command-line.js';
import { choice, httpUrl, text } from '../../src/cli/options.js';
import { exitWith, runCommandLine, UsageError } from '../../src/cli/usage.js';
import { parseS3Url } from '../../src/storage/s3-url.js';
import { MINIO_CREDENTIALS, startMinioContainer, TEST_SERVICES, type ContainerServer } from '../support/test-services.js';

const USAGE = `Usage: npm run test:integration -- --against minio|aws [--url s3://BUCKET[/PREFIX]] [--endpoint URL]

Runs the storage contract and the S3 behaviours a local fake server hides (multipart uploads, refused
credentials) against a real S3, under a fresh prefix below --url that the tests empty again:
  --against minio  a MinIO server at --endpoint; without --endpoint, one started in a container
                   where a container runtime answers (SCRIPTORIUM_TEST_SERVICES=local skips that),
                   else http://127.0.0.1:9000; --url defaults to s3://scriptorium-test, a bucket
                   created if missing; credentials from AWS_ACCESS_KEY_ID and
                   AWS_SECRET_ACCESS_KEY (default minioadmin, MinIO's own)
  --against aws    AWS S3: --url is required (a bucket you may write to); credentials and region
                   from the AWS chain (AWS_PROFILE, AWS_REGION, ...)`;

const OPTIONS = {
  against: choice(['minio', 'aws'] as const),
  url: text(),
  endpoint: httpUrl(),
};

const TESTS = ['storage/contract.test.js', 'storage/s3-real.test.js'];
const DEFAULT_MINIO_ENDPOINT = 'http://127.0.0.1:9000';
const MINIO_DEFAULT_CREDENTIALS = 'minioadmin';

async function main({ options }: CommandLine<typeof OPTIONS>): Promise<number> {
  if (options.against === undefined) throw new UsageError('--against minio or --against aws is required');
  const env: NodeJS.ProcessEnv = { ...process.env };
  let url = options.url;
  let minio: ContainerServer | undefined;
  if (options.against === 'minio') {
    if (options.endpoint === undefined && TEST_SERVICES.source === 'containers') {
      minio = await startMinioContainer([]);
      env.AWS_ACCESS_KEY_ID = MINIO_CREDENTIALS.accessKeyId;
      env.AWS_SECRET_ACCESS_KEY = MINIO_CREDENTIALS.secretAccessKey;
      process.stdout.write(`started MinIO in a container at ${minio.url}\n`);
    }
    env.S3_ENDPOINT = minio?.url ?? options.endpoint ?? DEFAULT_MINIO_ENDPOINT;
    env.AWS_ACCESS_KEY_ID ??= MINIO_DEFAULT_CREDENTIALS;
    env.AWS_SECRET_ACCESS_KEY ??= MINIO_DEFAULT_CREDENTIALS;
    env.AWS_REGION ??= 'us-east-1';
    url ??= 's3://scriptorium-test';
  } else {
    if (url === undefined) throw new UsageError('--against aws needs --url s3://BUCKET[/PREFIX], a bucket you may write to');
    if (options.endpoint !== undefined) throw new UsageError('--endpoint is for --against minio; AWS S3 is reached through its own endpoints');
    delete env.S3_ENDPOINT;
  }
  try {
    if (options.against === 'minio') await createBucketIfMissing(parseS3Url(url).bucket, env);
    env.SCRIPTORIUM_TEST_S3_URL = `${url.replace(/\/+$/, '')}/scriptorium-integration-${randomUUID()}`;
    process.stdout.write(`running ${TESTS.join(', ')} against ${env.SCRIPTORIUM_TEST_S3_URL}${env.S3_ENDPOINT ? ` at ${env.S3_ENDPOINT}` : ''}\n`);
    const dist = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...TESTS.map((file) => path.join(dist, file))], { env, stdio: 'inherit' });
    return await new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  } finally {
    await minio?.close();
  }
}

/** A fresh MinIO has no bucket; an existing one (ours from an earlier run, or the caller's) is used as it is. */
async function createBucketIfMissing(bucket: string, env: NodeJS.ProcessEnv): Promise<void> {
  const client = new S3Client({
    endpoint: env.S3_ENDPOINT,
    region: env.AWS_REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  } finally {
    client.destroy();
  }
}

exitWith('test:integration', runCommandLine(defineCommand({ usage: USAGE, options: OPTIONS, run: main }), process.argv.slice(2), 'test:integration'));
