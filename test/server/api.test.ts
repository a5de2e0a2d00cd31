// `scriptorium serve` over real HTTP, a real Redis and the S3 protocol (s3rver in-process): health
// without a key, everything else refused without a configured key, size limits that leave nothing in
// staging, cancellation, rejected inputs, and documents submitted as uploads and s3:// URIs read by two
// workers, with every answer checked against the OpenAPI document.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import { ScriptoriumApiError, ScriptoriumClient } from '../../src/client/scriptorium-client.js';
import { UPLOADS_FOLDER } from '../../src/jobs/storage-layout.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { parseApiKeys } from '../../src/server/api-keys.js';
import { startApiServer, type ApiServer } from '../../src/server/api-server.js';
import { callbackSignature, DELIVERY_HEADER, SIGNATURE_HEADER } from '../../src/server/document-callbacks.js';
import { documentRoutes } from '../../src/server/document-routes.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { openStorage } from '../../src/storage/open-storage.js';
import { LETTER, makePdf, makePng, makeText } from '../support/make-documents.js';
import { checkAnswer, documentedOperations } from '../support/openapi-check.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { waitUntil } from '../support/worker-processes.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const KEY = 'test-key-of-alice';
// sha256 of KEY, as an operator would configure it.
const API_KEYS = parseApiKeys('alice:sha256:c52d0df7d0d28e209a76fda1cf4b8d52bb604e648cc1e073947b17167e0408b2');
const MAX_DOCUMENT_BYTES = 64 * 1024;
/** More than any document the tests read. */
const MAX_DOCUMENT_PAGES = 3;
const OPTIONS = { variant: 'v1', mode: 'tiny', dpi: 36, maxTokens: 6 } as const;
const CALLBACK_SECRET = 'callback-secret';
const silent = pino({ level: 'silent' });

interface Received {
  headers: Record<string, string | string[] | undefined>;
  body: string;
  answered: number;
}

/** An HTTP receiver on 127.0.0.1 that answers 500 to its first `failFirst` requests, 200 after. */
async function callbackReceiver(failFirst: number): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const answered = received.length < failFirst ? 500 : 200;
      received.push({ headers: request.headers, body, answered });
      response.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/scriptorium`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('scriptorium serve', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let s3: S3Server;
  let storage: S3Storage;
  let server: ApiServer;
  let client: ScriptoriumClient;
  let workers: OcrWorkers[] = [];

  const url = (path: string) => new URL(path, server.url).href;
  const stagingObjects = async () => {
    const keys: string[] = [];
    for await (const object of storage.list(UPLOADS_FOLDER, { recursive: true })) keys.push(object.key);
    return keys;
  };
  const startWorkers = async () => {
    if (workers.length > 0) return;
    const model = { dir: await tinyCheckpoint('v1'), synthetic: true };
    workers = await Promise.all(
      [0, 1].map(() => startOcrWorkers({ model, checkpointId: 'sha256:tiny-v1', threads: 1, storage, redisUrl: redis.url, batch: 2, concurrency: 2, logger: silent })),
    );
  };

  before(async () => {
    redis = await startEmbeddedRedis();
    useS3rverCredentials();
    s3 = await startS3Server({ buckets: ['scriptorium', 'inbox'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    storage = openStorage('s3://scriptorium/api') as S3Storage;
    server = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      redisUrl: redis.url,
      storage,
      apiKeys: API_KEYS,
      maxDocumentBytes: MAX_DOCUMENT_BYTES,
      maxDocumentPages: MAX_DOCUMENT_PAGES,
      defaultVariant: 'v1',
      callbacks: { hosts: ['127.0.0.1'], secret: CALLBACK_SECRET, backoffMs: 100 },
      logger: silent,
    });
    client = new ScriptoriumClient({ baseUrl: server.url, apiKey: KEY });
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await server?.close();
    storage?.destroy();
    await s3?.close();
    await redis?.close();
    delete process.env.S3_ENDPOINT;
  });

  test('the configured hash is the sha256 of the key', async () => {
    const { hashApiKey } = await import('../../src/server/api-keys.js');
    assert.deepEqual(hashApiKey(KEY), API_KEYS[0].sha256);
  });

  test('/healthz and /readyz answer without a key', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const response = await fetch(url(path));
      const body = await response.json();
      checkAnswer('GET', path, response.status, body);
      assert.equal(response.status, 200, path);
    }
    assert.deepEqual(await client.readiness(), { redis: 'ok', storage: 'ok' });
  });

  test('requests without a key or with a wrong one are refused and queue nothing', async () => {
    const pdf = await makePdf([LETTER], 1);
    for (const authorization of [undefined, 'Bearer not-a-key', `Bearer ${KEY}x`, 'Basic ' + Buffer.from(`alice:wrong`).toString('base64')]) {
      const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
      const form = new FormData();
      form.append('document', new Blob([Uint8Array.from(pdf)]), 'a.pdf');
      for (const [method, path, body] of [
        ['GET', '/openapi.json', undefined],
        ['GET', '/v1/documents/0123456789abcdef0123456789abcdef', undefined],
        ['POST', '/v1/documents', form],
        ['GET', '/dashboard', undefined],
      ] as const) {
        const response = await fetch(url(path), { method, headers, body });
        assert.equal(response.status, 401, `${method} ${path} with ${authorization}`);
        assert.match(response.headers.get('www-authenticate') ?? '', path === '/dashboard' ? /^Basic/ : /^Bearer/);
      }
    }
    assert.deepEqual(await stagingObjects(), []);
  });

  test('the dashboard answers behind the key, also as the Basic password', async () => {
    const response = await fetch(url('/dashboard'), { headers: { authorization: 'Basic ' + Buffer.from(`me:${KEY}`).toString('base64') } });
    assert.equal(response.status, 200);
    assert.match(await response.text(), /<html/i);
  });

  test('every route of the documents router is in the OpenAPI document, which the server serves', async () => {
    const router = documentRoutes({ submit: {} as never, status: {} as never, events: {} as never }) as unknown as {
      stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }>;
    };
    const routes = router.stack.flatMap(({ route }) =>
      route === undefined ? [] : Object.keys(route.methods).map((method) => `${method.toUpperCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`),
    );
    assert.equal(routes.length, 6);
    for (const route of routes) assert.ok(documentedOperations().includes(route), `${route} is not documented`);
    const served = await client.openapi();
    assert.equal(served.openapi, '3.1.0');
    assert.deepEqual(Object.keys(served.paths as object).sort(), documentedOperations().map((op) => op.split(' ')[1]).filter((p, i, all) => all.indexOf(p) === i).sort());
  });

  test('a too-large upload is refused with 413 and leaves no staging object', async () => {
    const form = new FormData();
    form.append('variant', 'v1');
    form.append('document', new Blob([new Uint8Array(MAX_DOCUMENT_BYTES + 40_000).fill(7)]), 'big.pdf');
    const response = await fetch(url('/v1/documents'), { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form });
    const body = await response.json();
    checkAnswer('POST', '/v1/documents', response.status, body);
    assert.equal(response.status, 413);
    assert.match(body.error, /larger than the limit of 65536 bytes/);
    assert.deepEqual(await stagingObjects(), []);
  });

  test('bad options and unusable documents are refused with their reasons', async () => {
    const png = await makePng();
    await assert.rejects(client.submitFile(png, 'scan.png', { ...OPTIONS, task: 'parse' }), (error: ScriptoriumApiError) => {
      assert.equal(error.status, 400);
      assert.match(error.message, /task must be one of ocr, markdown/);
      return true;
    });
    await assert.rejects(client.submitFile(makeText(), 'notes.txt', OPTIONS), (error: ScriptoriumApiError) => {
      assert.equal(error.status, 422);
      assert.match(error.message, /upload:notes\.txt: .*not a supported document/);
      return true;
    });
    await assert.rejects(client.submitFile(await makePdf([LETTER, LETTER, LETTER, LETTER], 1), 'long.pdf', OPTIONS), (error: ScriptoriumApiError) => {
      assert.equal(error.status, 422);
      assert.equal(error.message, '422: upload:long.pdf: too many pages: 4, over the limit of 3 per document (--max-document-pages)');
      return true;
    });
    await assert.rejects(client.submitReference({ url: 'https://example.com/a.pdf' }), (error: ScriptoriumApiError) => error.status === 403);
    await assert.rejects(client.submitFile(png, 'scan.png', { ...OPTIONS, callbackUrl: 'https://example.com/hook' }), (error: ScriptoriumApiError) => {
      assert.equal(error.status, 403);
      assert.match(error.message, /no callbacks to example\.com/);
      return true;
    });
    await assert.rejects(client.submitReference({ uri: 'https://example.com/a.pdf' }), (error: ScriptoriumApiError) => error.status === 400);
    await assert.rejects(client.status('not-a-doc-id'), (error: ScriptoriumApiError) => error.status === 400);
    await assert.rejects(client.status('0123456789abcdef0123456789abcdef'), (error: ScriptoriumApiError) => error.status === 404);
    assert.deepEqual(await stagingObjects(), []);
  });

  test('DELETE cancels queued pages: the document settles with them failed as cancelled', async () => {
    const pdf = await makePdf([LETTER, LETTER, LETTER], 2);
    const submitted = await client.submitFile(pdf, 'cancelled.pdf', { ...OPTIONS, dpi: 37 });
    assert.equal(submitted.pages, 3);
    const queued = await client.status(submitted.docId);
    checkAnswer('GET', '/v1/documents/{docId}', 200, queued);
    assert.deepEqual({ state: queued.state, pages: queued.pages }, { state: 'queued', pages: { total: 3, done: 0, failed: 0, pending: 3, flagged: 0 } });
    const response = await fetch(url(submitted.links.self), { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
    checkAnswer('DELETE', '/v1/documents/{docId}', response.status, await response.json());
    assert.equal(response.status, 202);

    await startWorkers();
    const settled = await client.waitUntilSettled(submitted.docId);
    assert.equal(settled.state, 'partial');
    assert.deepEqual(
      settled.failedPages.map(({ page, reason }) => [page, /cancelled/.test(reason)]),
      [
        [1, true],
        [2, true],
        [3, true],
      ],
    );
  });

  test('an upload and an s3:// object are read through to their results by two workers', async () => {
    await startWorkers();
    const pdf = await makePdf([LETTER, LETTER], 3);
    const upload = await client.submitFile(pdf, 'report.pdf', OPTIONS);
    checkAnswer('POST', '/v1/documents', 202, upload);
    assert.deepEqual({ state: upload.state, pages: upload.pages }, { state: 'enqueued', pages: 2 });
    const progress: number[] = [];
    for await (const status of client.follow(upload.docId)) {
      checkAnswer('GET', '/v1/documents/{docId}', 200, status);
      progress.push(status.pages.done);
    }
    assert.equal(progress.at(-1), 2, 'the stream ends with every page done');
    assert.deepEqual([...progress].sort(), progress, 'done pages only grow');
    const inbox = openStorage('s3://inbox') as S3Storage;
    await inbox.put('scans/scan.png', await makePng());
    const byUri = await client.submitReference({ uri: 's3://inbox/scans/scan.png', ...OPTIONS });
    assert.equal(byUri.pages, 1);

    for (const { docId, pages } of [upload, byUri]) {
      const status = await client.waitUntilSettled(docId);
      checkAnswer('GET', '/v1/documents/{docId}', 200, status);
      // The random weights run to the token budget: every page is flagged max_tokens, and still done.
      assert.deepEqual({ state: status.state, pages: status.pages, failed: status.failedPages }, {
        state: 'completed',
        pages: { total: pages, done: pages, failed: 0, pending: 0, flagged: pages },
        failed: [],
      });
      const document = await client.result(docId, 'json');
      assert.equal(document.pages.length, pages);
      assert.deepEqual(status.flaggedPages, document.flagged);
      assert.ok(status.flaggedPages.every(({ flags }) => flags.includes('max_tokens')), JSON.stringify(status.flaggedPages));
      const markdown = await client.result(docId, 'md');
      const pageMarkdown = await Promise.all(Array.from({ length: pages }, (_, i) => client.page(docId, i + 1, 'md')));
      for (const text of pageMarkdown) assert.ok(markdown.includes(text), 'document.md holds every page');
      const page = await client.page(docId, 1, 'json');
      assert.deepEqual({ docId: page.docId, page: page.source.page }, { docId, page: 1 });
    }
    assert.equal((await client.result(byUri.docId, 'json')).source.uri, 's3://inbox/scans/scan.png');
    assert.equal((await client.result(upload.docId, 'json')).source.uri, 'upload:report.pdf');
    const html = await fetch(url(`${upload.links.result}?format=html`), { headers: { authorization: `Bearer ${KEY}` } });
    assert.match(html.headers.get('content-security-policy') ?? '', /default-src 'none'.*sandbox/);
    assert.match(await html.text(), /<section class="page-view" id="page-2" data-page="2">/);
    const searchable = await client.result(upload.docId, 'pdf');
    assert.equal(Buffer.from(searchable.subarray(0, 5)).toString('latin1'), '%PDF-');
    const added = await client.result(upload.docId, 'pdf', { textLayer: 'add' });
    assert.equal(Buffer.from(added.subarray(0, 5)).toString('latin1'), '%PDF-');
    for (const [query, reason] of [
      ['format=md&textLayer=add', /textLayer applies to format=pdf only \(got format=md\)/],
      ['format=pdf&textLayer=replace', /textLayer must be one of keep, add/],
    ] as const) {
      const refused = await fetch(url(`${upload.links.result}?${query}`), { headers: { authorization: `Bearer ${KEY}` } });
      const body = await refused.json();
      checkAnswer('GET', '/v1/documents/{docId}/result', refused.status, body);
      assert.equal(refused.status, 400, query);
      assert.match(body.error, reason);
    }
    assert.deepEqual(await stagingObjects(), [], 'uploads are removed once staged under their docId');
    const again = await client.submitFile(pdf, 'report-again.pdf', OPTIONS);
    assert.deepEqual({ docId: again.docId, state: again.state }, { docId: upload.docId, state: 'already-done' });
    inbox.destroy();
  });

  test('a callback is retried when the receiver fails, delivered once, and signed', async () => {
    await startWorkers();
    const receiver = await callbackReceiver(1);
    try {
      const submitted = await client.submitFile(await makePng(), 'called-back.png', { ...OPTIONS, dpi: 38, callbackUrl: receiver.url });
      await waitUntil(() => receiver.received.some(({ answered }) => answered === 200), 120_000, 'a callback answered 200');
      const callbacks = new Queue('callbacks', { prefix: DOCUMENTS.prefix, connection: redisOptions(redis.url, 'client') });
      try {
        const jobs = await callbacks.getJobs(['completed', 'active', 'waiting', 'delayed', 'failed']);
        const [job] = jobs.filter((candidate) => candidate.data.docId === submitted.docId);
        await waitUntil(async () => (await job.getState()) === 'completed', 30_000, 'the callback job completed');
      } finally {
        await callbacks.close();
      }
      assert.deepEqual(receiver.received.map(({ answered }) => answered), [500, 200], 'one failed try, then one delivery');
      const [first, second] = receiver.received;
      assert.equal(second.body, first.body, 'every try sends the same body');
      assert.equal(second.headers[DELIVERY_HEADER], first.headers[DELIVERY_HEADER]);
      assert.equal(second.headers[SIGNATURE_HEADER], callbackSignature(CALLBACK_SECRET, second.body));
      const body = JSON.parse(second.body);
      checkAnswer('GET', '/v1/documents/{docId}', 200, body.status);
      assert.deepEqual({ event: body.event, docId: body.status.docId, state: body.status.state }, { event: 'document.settled', docId: submitted.docId, state: 'completed' });
    } finally {
      await receiver.close();
    }
  });

  test('a key over its rate limit gets 429 with Retry-After', async () => {
    const limited = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      redisUrl: redis.url,
      storage,
      apiKeys: parseApiKeys(`limited:sha256:${Buffer.from(API_KEYS[0].sha256).toString('hex')}`),
      rateLimit: { requests: 2, windowMs: 3_600_000 },
      defaultVariant: 'v1',
      logger: silent,
    });
    try {
      const limitedClient = new ScriptoriumClient({ baseUrl: limited.url, apiKey: KEY });
      await limitedClient.openapi();
      await limitedClient.openapi();
      const response = await fetch(new URL('/openapi.json', limited.url), { headers: { authorization: `Bearer ${KEY}` } });
      checkAnswer('GET', '/openapi.json', response.status, await response.json());
      assert.equal(response.status, 429);
      assert.ok(Number(response.headers.get('retry-after')) > 0);
    } finally {
      await limited.close();
    }
  });
});
