// serveApp, the start and stop `serve` and `dashboard` share: the app answers at the URL it reports;
// close() ends open requests, then closes the app's resources, once however often it is called; a
// server that cannot listen closes the resources at once and says which address failed.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import express from 'express';

import { serveApp } from '../../src/server/listen.js';

/** GET /hello answers; GET /hang never does (only close() ends it) and calls `onHang` when it arrives. */
function helloApp(onHang: () => void = () => undefined) {
  const app = express();
  app.get('/hello', (_request, response) => {
    response.send('hello');
  });
  app.get('/hang', () => onHang());
  return app;
}

test('the app answers at the URL serveApp reports', async () => {
  const served = await serveApp(helloApp(), '127.0.0.1', 0, async () => undefined);
  try {
    assert.match(served.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const response = await fetch(new URL('hello', served.url));
    assert.equal(await response.text(), 'hello');
  } finally {
    await served.close();
  }
});

test('close() stops the server before closing the resources, and does both once however often called', async () => {
  const events: string[] = [];
  const served = await serveApp(helloApp(), '127.0.0.1', 0, async () => {
    const stillServing = await fetch(new URL('hello', served.url)).then(
      () => true,
      () => false,
    );
    events.push(stillServing ? 'resources closed while serving' : 'resources closed after the server');
  });
  const first = served.close();
  const second = served.close();
  assert.equal(first, second);
  await Promise.all([first, second, served.close()]);
  assert.deepEqual(events, ['resources closed after the server']);
  await assert.rejects(fetch(new URL('hello', served.url)));
});

// Without ending open requests close() would wait forever: the timeout turns that into a failure.
test('close() ends a request still open instead of waiting for it', { timeout: 60_000 }, async () => {
  let resourcesClosed = 0;
  let arrived!: () => void;
  const hangArrived = new Promise<void>((resolve) => (arrived = resolve));
  const served = await serveApp(helloApp(arrived), '127.0.0.1', 0, async () => {
    resourcesClosed++;
  });
  const hanging = fetch(new URL('hang', served.url));
  await hangArrived;
  await served.close();
  await assert.rejects(hanging);
  assert.equal(resourcesClosed, 1);
});

test('a port in use: the resources are closed and the error names the address', async () => {
  const holder = await serveApp(helloApp(), '127.0.0.1', 0, async () => undefined);
  const port = Number(new URL(holder.url).port);
  let resourcesClosed = 0;
  try {
    await assert.rejects(
      serveApp(helloApp(), '127.0.0.1', port, async () => {
        resourcesClosed++;
      }),
      new RegExp(`^Error: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`),
    );
    assert.equal(resourcesClosed, 1);
  } finally {
    await holder.close();
  }
});
