// `scriptorium watch` as a user runs it: option errors name the problem before anything starts, and a
// webhook watch process enqueues what it is sent, logs each document with its docId, never logs the
// secret, and stops cleanly on SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import { watchCommand, WEBHOOK_SECRET_ENV } from '../../src/cli/watch-command.js';
import { UsageError } from '../../src/cli/usage.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { freePort } from '../../src/queue/embedded-redis.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { S3RVER_SECRET, startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { createdNotification } from '../support/s3-notifications.js';

const MAIN = path.resolve('dist/src/cli/main.js');
const SECRET = 'watch-command-test-secret';

describe('scriptorium watch options', () => {
  const rejects = (args: string[], message: RegExp, env: Record<string, string> = {}) => async () => {
    const saved = process.env[WEBHOOK_SECRET_ENV];
    delete process.env[WEBHOOK_SECRET_ENV];
    Object.assign(process.env, env);
    try {
      await assert.rejects(watchCommand.run(args), (error: unknown) => error instanceof UsageError && message.test(error.message));
    } finally {
      if (saved === undefined) delete process.env[WEBHOOK_SECRET_ENV];
      else process.env[WEBHOOK_SECRET_ENV] = saved;
    }
  };

  test('no source of events', rejects(['--variant', 'v1'], /give one source of events/));
  test('two sources of events', rejects(['--redis-list', 'events', '--webhook-port', '8080', '--variant', 'v1'], /give one source of events/));
  test("another source's option", rejects(['--webhook-port', '8080', '--events-redis', 'redis://x', '--variant', 'v1'], /--events-redis goes with --redis-list/));
  test('a webhook without its secret', rejects(['--webhook-port', '8080', '--variant', 'v1'], new RegExp(`set ${WEBHOOK_SECRET_ENV}`)));
  test('a port out of range', rejects(['--webhook-port', '70000', '--variant', 'v1'], /^--webhook-port must be a port number from 1 to 65535 \(got "70000"\)$/, { [WEBHOOK_SECRET_ENV]: SECRET }));
  test('an SQS queue that is no URL', rejects(['--sqs-queue', 'scriptorium-events', '--variant', 'v1'], /--sqs-queue must be an http:\/\/ or https:\/\/ URL/));
  test('an empty list key', rejects(['--redis-list', '', '--variant', 'v1'], /--redis-list must not be empty/));
  test('a wrong variant, as enqueue reports it', rejects(['--redis-list', 'events', '--variant', 'v9'], /--variant must be one of v1, v2, v3/));
});

describe('a scriptorium watch process', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let s3: S3Server;
  let work: string;

  before(async () => {
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['inbox'] });
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-watch-command-'));
  });
  after(async () => {
    await s3?.close();
    await rm(work, { recursive: true, force: true });
  });

  test('enqueues what its webhook is sent, logs the docId, never the secret, and stops on SIGTERM', async () => {
    const pdf = await makePdf([LETTER], 1);
    const inbox = openStorage('s3://inbox', { s3: { endpoint: s3.endpoint } }) as S3Storage;
    await inbox.put('drop/scan.pdf', pdf);
    inbox.destroy();
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN, 'watch', '--webhook-port', String(port), '--to', path.join(work, 'storage'), '--variant', 'v1', '--mode', 'tiny'], {
      env: { ...process.env, REDIS_URL: redis.url, S3_ENDPOINT: s3.endpoint, AWS_ACCESS_KEY_ID: S3RVER_SECRET, AWS_SECRET_ACCESS_KEY: S3RVER_SECRET, [WEBHOOK_SECRET_ENV]: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 20_000;
      while (!stderr.includes('listening for event notifications')) {
        if (Date.now() > deadline) throw new Error(`the watch did not start: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const response = await fetch(`http://127.0.0.1:${port}/events`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${SECRET}` },
        body: createdNotification('inbox', [{ key: 'drop/scan.pdf', eTag: '"c1"' }]),
      });
      assert.equal(response.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);

    const options: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 144 };
    const docId = documentId(pdf, options);
    const documents = new Queue(DOCUMENTS.name, { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
    try {
      assert.notEqual(await documents.getJob(docId), undefined);
    } finally {
      await documents.close();
    }
    const logged = stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(logged.some((line) => line.docId === docId && line.bucket === 'inbox' && line.key === 'drop/scan.pdf' && line.msg === 'enqueued'), stderr);
    assert.equal(stderr.includes(SECRET), false);
  });
});
