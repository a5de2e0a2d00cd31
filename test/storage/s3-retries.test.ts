// S3 outages: the SDK retries transient failures (refused connections, 5xx, throttling) with
// exponential backoff and jitter; what still fails surfaces as a 'transient' StorageError that names
// the endpoint and never the credentials.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { S3Storage } from '../../src/storage/s3-storage.js';
import { StorageError } from '../../src/storage/storage-error.js';
import { S3RVER_SECRET, startS3Server, useS3rverCredentials } from '../support/s3-server.js';

before(useS3rverCredentials);

test('a put started while the server is down succeeds when it comes back on the same port within the retry window', async () => {
  const first = await startS3Server({ buckets: ['outage'] });
  const storage = new S3Storage('s3://outage', { endpoint: first.endpoint, maxAttempts: 10 });
  await first.close();

  const started = performance.now();
  const putting = storage.put('during-outage.txt', Readable.from([Buffer.from('stored after the restart')]));
  await delay(300);
  const restarted = await startS3Server({ buckets: ['outage'], port: first.port });
  try {
    await putting;
    assert.ok(performance.now() - started >= 300, 'the put cannot have succeeded before the restart');
    assert.equal((await storage.get('during-outage.txt')).toString(), 'stored after the restart');
  } finally {
    storage.destroy();
    await restarted.close();
  }
});

test('a put to a server that stays down past the last attempt fails as transient, naming the endpoint and not the secret', async () => {
  const server = await startS3Server({ buckets: ['outage'] });
  const storage = new S3Storage('s3://outage/run-1', { endpoint: server.endpoint, maxAttempts: 3 });
  await server.close();

  await assert.rejects(storage.put('lost.txt', Buffer.from('x')), (error: unknown) => {
    assert.ok(error instanceof StorageError);
    assert.equal(error.code, 'transient');
    assert.equal(
      error.message,
      `put "lost.txt" in s3://outage/run-1 failed after 3 attempts: ${server.endpoint} is unreachable, throttling or failing ` +
        `(connect ECONNREFUSED ${server.endpoint.slice('http://'.length)}); retry later, or raise maxAttempts (AWS_MAX_ATTEMPTS) to ride out longer outages`,
    );
    assert.ok(!error.message.includes(S3RVER_SECRET));
    return true;
  });
  storage.destroy();
});

test('a connection lost in the middle of getStream fails the stream with a transient StorageError', async () => {
  const server = await startS3Server({ buckets: ['outage'] });
  const storage = new S3Storage('s3://outage', { endpoint: server.endpoint });
  await storage.put('large.bin', Buffer.alloc(24 * 1024 * 1024, 7));
  const stream = await storage.getStream('large.bin');
  const reading = assert.rejects(
    (async () => {
      for await (const chunk of stream) void chunk;
    })(),
    { name: 'StorageError', code: 'transient', message: /^getStream "large.bin" in s3:\/\/outage failed: .* \(aborted\); retry later$/ },
  );
  await delay(1); // let the first bytes arrive, then cut every connection
  await server.close();

  await reading;
  storage.destroy();
});

for (const [status, code] of [
  [503, 'SlowDown'],
  [500, 'InternalError'],
  [429, 'TooManyRequests'],
] as const) {
  test(`two ${status} ${code} answers in a row are retried and the put succeeds`, async () => {
    const server = await startS3Server({ buckets: ['busy'] });
    const proxy = await startFailingProxy(server.endpoint, 2, status, code);
    const storage = new S3Storage('s3://busy', { endpoint: proxy.endpoint, maxAttempts: 3 });
    try {
      await storage.put('object.txt', Buffer.from('made it'));
      assert.equal(proxy.failed(), 2);
      assert.equal((await storage.get('object.txt')).toString(), 'made it');
    } finally {
      storage.destroy();
      await proxy.close();
      await server.close();
    }
  });
}

/** An HTTP proxy on 127.0.0.1 that answers the first `failures` requests with an S3 error, then forwards to `target`. */
async function startFailingProxy(target: string, failures: number, status: number, code: string) {
  let failed = 0;
  const server = http.createServer((request, response) => {
    if (failed < failures) {
      failed++;
      request.resume();
      response.writeHead(status, { 'content-type': 'application/xml' });
      response.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>test failure</Message></Error>`);
      return;
    }
    // Headers, Host included, pass through unchanged so that the request signature stays valid.
    const upstream = http.request(new URL(request.url ?? '/', target), { method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failed: () => failed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}
