// The page viewer over plain HTTP: under `serve`, nothing but the login form and the static files
// without a key or session; the login's session cookie (HttpOnly, SameSite=Strict, Secure over
// https) opens the viewer and nothing else; forms from another origin are refused; every answer
// carries the Content-Security-Policy. Under `view`: no key, localhost names only, and a retry button
// disabled with its reason when there is no Redis.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { pageJobId } from '../../src/queue/job-ids.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import { parseApiKeys } from '../../src/server/api-keys.js';
import { startApiServer, type ApiServer } from '../../src/server/api-server.js';
import type { ServedApp } from '../../src/server/listen.js';
import { VIEWER_POLICY } from '../../src/server/viewer-routes.js';
import { startViewerServer } from '../../src/server/viewer-server.js';
import { SESSION_TTL_S } from '../../src/server/viewer-sessions.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { FAILED_PAGE, PAGE_1_BLOCKS, writeViewerDocument } from '../support/viewer-documents.js';

const KEY = 'test-key-of-alice';
const API_KEYS = parseApiKeys('alice:sha256:c52d0df7d0d28e209a76fda1cf4b8d52bb604e648cc1e073947b17167e0408b2');
const silent = pino({ level: 'silent' });

describe('the viewer under serve', { skip: REDIS_SERVER_MISSING }, () => {
  let dir: string;
  let redis: EmbeddedRedis;
  let server: ApiServer;
  let docId: string;
  const url = (route: string) => new URL(route, server.url).href;
  const origin = () => server.url.replace(/\/$/, '');

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-viewer-'));
    const storage = new FileStorage(dir);
    ({ docId } = await writeViewerDocument(storage));
    redis = await startEmbeddedRedis();
    server = await startApiServer({ host: '127.0.0.1', port: 0, redisUrl: redis.url, storage, apiKeys: API_KEYS, defaultVariant: 'v1', logger: silent });
  });
  after(async () => {
    await server?.close();
    await redis?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function login(headers: Record<string, string> = {}): Promise<Response> {
    return fetch(url('/viewer/login'), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: origin(), ...headers },
      body: new URLSearchParams({ key: KEY }).toString(),
    });
  }

  test('without a key or a session every viewer page, image and form is refused; the login form and static files answer', async () => {
    for (const route of ['/viewer/', `/viewer/documents/${docId}/pages/1`, `/viewer/documents/${docId}/pages/1/image.jpg`]) {
      const response = await fetch(url(route), { headers: { cookie: 'scriptorium_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
      assert.equal(response.status, 401, route);
      assert.match(await response.text(), /<form method="post" action="\/viewer\/login">/);
    }
    const retry = await fetch(url(`/viewer/documents/${docId}/pages/${FAILED_PAGE}/retry`), { method: 'POST', headers: { origin: origin() } });
    assert.equal(retry.status, 401);
    assert.equal((await fetch(url('/viewer/login'))).status, 200);
    assert.equal((await fetch(url('/viewer/static/viewer.js'))).status, 200);
  });

  test('every viewer answer carries the strict Content-Security-Policy', async () => {
    for (const route of ['/viewer/login', '/viewer/static/viewer.css', '/viewer/']) {
      const response = await fetch(url(route));
      assert.equal(response.headers.get('content-security-policy'), VIEWER_POLICY, route);
    }
    assert.match(VIEWER_POLICY, /^default-src 'self';/);
    assert.doesNotMatch(VIEWER_POLICY, /unsafe-inline|unsafe-eval/);
  });

  test('a wrong key gets no session; the right one gets an HttpOnly, SameSite=Strict cookie, Secure over https', async () => {
    const wrong = await fetch(url('/viewer/login'), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: origin() },
      body: 'key=not-a-key',
    });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('set-cookie'), null);

    const response = await login();
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), '/viewer/');
    const cookie = response.headers.get('set-cookie') ?? '';
    assert.match(cookie, new RegExp(`^scriptorium_session=[A-Za-z0-9_-]{43}; Path=/viewer; Max-Age=${SESSION_TTL_S}; HttpOnly; SameSite=Strict$`));
    const overHttps = (await login({ 'x-forwarded-proto': 'https', origin: origin().replace('http:', 'https:') })).headers.get('set-cookie') ?? '';
    assert.match(overHttps, /; HttpOnly; SameSite=Strict; Secure$/);
  });

  test('the session opens the viewer, and only the viewer: the API still wants the key', async () => {
    const session = ((await login()).headers.get('set-cookie') ?? '').split(';')[0];
    const list = await fetch(url('/viewer/'), { headers: { cookie: session } });
    assert.equal(list.status, 200);
    const html = await list.text();
    assert.match(html, new RegExp(`<tr data-doc-id="${docId}"><td><a href="/viewer/documents/${docId}/pages/1">/in/minutes &lt;draft&gt;\\.pdf</a>`));
    assert.match(html, /<td>failed pages<\/td><td>4<\/td><td>2<\/td><td>1<\/td><td>0\.62<\/td>/, 'state, pages, failed, flagged, confidence');
    assert.equal((await fetch(url(`/v1/documents/${docId}`), { headers: { cookie: session } })).status, 401);
  });

  test('a login or a retry posted from another origin is refused, and queues nothing', async () => {
    assert.equal((await login({ origin: 'https://evil.example' })).status, 403);
    const session = ((await login()).headers.get('set-cookie') ?? '').split(';')[0];
    const retryUrl = url(`/viewer/documents/${docId}/pages/${FAILED_PAGE}/retry`);
    const foreign: Array<Record<string, string>> = [{ cookie: session, origin: 'https://evil.example' }, { cookie: session }];
    for (const headers of foreign) {
      assert.equal((await fetch(retryUrl, { method: 'POST', redirect: 'manual', headers })).status, 403);
    }
    const pages = new Queue(pageQueue('v1').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v1').prefix });
    try {
      assert.equal(await pages.getJob(pageJobId(docId, FAILED_PAGE, FAILED_PAGE)), undefined);
    } finally {
      await pages.close();
    }
  });

  test("a page view draws one box per block, escapes the document's text and offers the retry of a failed page", async () => {
    const headers = { authorization: `Bearer ${KEY}` };
    const page = await (await fetch(url(`/viewer/documents/${docId}/pages/1`), { headers })).text();
    assert.equal([...page.matchAll(/<rect class="box /g)].length, PAGE_1_BLOCKS.length);
    assert.doesNotMatch(page, /<script>alert/);
    assert.match(page, /<a id="next-flagged" href="[^"]+\/pages\/2">/);
    const failed = await (await fetch(url(`/viewer/documents/${docId}/pages/${FAILED_PAGE}`), { headers })).text();
    assert.match(failed, new RegExp(`<form class="retry-form" method="post" action="/viewer/documents/${docId}/pages/${FAILED_PAGE}/retry">`));
    const image = await fetch(url(`/viewer/documents/${docId}/pages/1/image.jpg`), { headers });
    assert.equal(image.headers.get('content-type'), 'image/jpeg');
  });

  test('a retry of a page that did not fail is refused with the reason, and queues nothing', async () => {
    const response = await fetch(url(`/viewer/documents/${docId}/pages/1/retry`), { method: 'POST', redirect: 'manual', headers: { authorization: `Bearer ${KEY}`, origin: origin() } });
    assert.equal(response.status, 409);
    assert.match(await response.text(), /Page 1 was not queued again: page 1 did not fail \(the failed pages: 3, 4\)/);
    const pages = new Queue(pageQueue('v1').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v1').prefix });
    try {
      assert.deepEqual(await pages.getJobs(['waiting', 'prioritized', 'delayed', 'paused']), []);
    } finally {
      await pages.close();
    }
  });
});

describe('the viewer of `view`', () => {
  let dir: string;
  let viewer: ServedApp;
  let docId: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-view-'));
    const storage = new FileStorage(dir);
    ({ docId } = await writeViewerDocument(storage));
    viewer = await startViewerServer({ port: 0, storage, retry: { unavailable: 'no Redis answers at redis://127.0.0.1:1' }, logger: silent });
  });
  after(async () => {
    await viewer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('listens on 127.0.0.1 and asks for no key, but answers only requests addressed to localhost names', async () => {
    assert.match(viewer.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.equal((await fetch(new URL('/viewer/', viewer.url))).status, 200);
    // fetch sends the URL's own Host, so a plain request names another.
    const { port } = new URL(viewer.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path: '/viewer/', headers: { host: `attacker.example:${port}` } }, (response) => {
        response.resume();
        resolve(response.statusCode);
      }).on('error', reject);
    });
    assert.equal(status, 421);
  });

  test('without a Redis the retry button is shown disabled, with the reason', async () => {
    const page = await (await fetch(new URL(`/viewer/documents/${docId}/pages/${FAILED_PAGE}`, viewer.url))).text();
    assert.match(page, /<button type="button" disabled>Retry this page<\/button> <span class="disabled-reason">no Redis answers at redis:\/\/127\.0\.0\.1:1<\/span>/);
    assert.doesNotMatch(page, /retry-form/);
  });
});
