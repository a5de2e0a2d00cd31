// `scriptorium serve` as a process: it starts from its environment (hashed keys, allowed fetch hosts),
// fetches a document from an allowed https URL into staging and queues it, refuses redirects, and
// stops cleanly on SIGTERM. The https server uses a certificate made here with openssl, trusted by
// the serve process through NODE_EXTRA_CA_CERTS.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { UPLOADS_FOLDER } from '../../src/jobs/storage-layout.js';
import { documentId } from '../../src/producer/doc-id.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { makePng } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { MAIN } from '../support/worker-processes.js';

const OPENSSL_MISSING = spawnSync('openssl', ['version']).error === undefined ? false : 'openssl is not installed';
const KEY = 'cli-test-key';

describe('scriptorium serve as a process', { skip: REDIS_SERVER_MISSING || OPENSSL_MISSING }, () => {
  let dir: string;
  let redis: EmbeddedRedis;
  let origin: Server;
  let serve: ChildProcess;
  let stderr = '';
  let api = '';
  let png: Buffer;
  let storage: FileStorage;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-serve-'));
    const [keyFile, certFile] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
    png = await makePng();
    origin = createServer({ key: await readFile(keyFile), cert: await readFile(certFile) }, (request, response) => {
      if (request.url === '/scan.png') response.writeHead(200, { 'content-type': 'image/png' }).end(png);
      else response.writeHead(302, { location: 'https://elsewhere.example/scan.png' }).end();
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    redis = await startEmbeddedRedis();
    storage = new FileStorage(path.join(dir, 'storage'));
    serve = spawn(process.execPath, [MAIN, 'serve', '--port', '0', '--variant', 'v1', '--to', storage.root], {
      env: {
        ...process.env,
        REDIS_URL: redis.url,
        SCRIPTORIUM_API_KEYS: `ci:sha256:${createHash('sha256').update(KEY).digest('hex')}`,
        SCRIPTORIUM_FETCH_HOSTS: 'localhost',
        NODE_EXTRA_CA_CERTS: certFile,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    api = await new Promise<string>((resolve, reject) => {
      serve.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const url = /"url":"(http:\/\/[^"]+)"/.exec(stderr)?.[1];
        if (url !== undefined) resolve(url);
      });
      serve.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${stderr}`)));
    });
  });

  after(async () => {
    if (serve?.exitCode === null) serve.kill('SIGKILL');
    await new Promise<void>((resolve) => origin?.close(() => resolve()));
    await redis?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const submit = (body: object) =>
    fetch(new URL('/v1/documents', api), { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  test('an allowed https URL is fetched into staging and queued under the docId of its bytes', async () => {
    const { port } = origin.address() as AddressInfo;
    const response = await submit({ url: `https://localhost:${port}/scan.png`, mode: 'tiny', dpi: 36 });
    const answer = await response.json();
    assert.equal(response.status, 202, JSON.stringify(answer));
    const docId = documentId(png, { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36 });
    assert.deepEqual({ docId: answer.docId, state: answer.state, pages: answer.pages }, { docId, state: 'enqueued', pages: 1 });
    assert.deepEqual(await storage.get(`staging/${docId}/source.png`), png);
    const leftovers = [];
    for await (const object of storage.list(UPLOADS_FOLDER, { recursive: true })) leftovers.push(object.key);
    assert.deepEqual(leftovers, []);
  });

  test('a redirect is not followed (it could lead to a host that is not allowed)', async () => {
    const { port } = origin.address() as AddressInfo;
    const response = await submit({ url: `https://localhost:${port}/moved` });
    assert.equal(response.status, 502);
  });

  test('SIGTERM stops it with status 0', async () => {
    const exited = new Promise<number | null>((resolve) => serve.once('exit', (code) => resolve(code)));
    serve.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });
});
