// The tests' S3 server keeps S3's promise that an object is stored whole or not at all (s3rver alone
// breaks it: s3-server.ts). The soak's storage faults cut puts off part-way, and its audit trusts that
// a page result it reads is one a worker wrote.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { S3Storage } from '../../src/storage/s3-storage.js';
import { startS3Server, useS3rverCredentials, type S3Server } from '../support/s3-server.js';

let server: S3Server;
let storage: S3Storage;

before(async () => {
  useS3rverCredentials();
  server = await startS3Server({ buckets: ['whole'] });
  storage = new S3Storage('s3://whole', { endpoint: server.endpoint });
});

after(async () => {
  storage.destroy();
  await server.close();
});

/** A PUT of `declared` bytes, sent by hand so that it can stop part-way; s3rver takes unsigned requests. */
function rawPut(key: string, declared: number): { request: http.ClientRequest; status: Promise<number> } {
  const request = http.request(`${server.endpoint}/whole/${key}`, { method: 'PUT', headers: { 'content-length': declared } });
  const status = new Promise<number>((resolve, reject) => {
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
  return { request, status };
}

test('a reader during a put gets the old object whole, then the new one', async () => {
  await storage.put('page.json', Buffer.from('{"old":true}'));
  const { request, status } = rawPut('page.json', 12);
  request.write('{"new":');
  await new Promise((resolve) => setTimeout(resolve, 200)); // the server has the first bytes
  assert.equal((await storage.get('page.json')).toString(), '{"old":true}');
  request.end('true}');
  assert.equal(await status, 200);
  assert.equal((await storage.get('page.json')).toString(), '{"new":true}');
});

test('a put cut off part-way leaves the old object and nothing else', async () => {
  await storage.put('cut/page.json', Buffer.from('{"old":true}'));
  const { request, status } = rawPut('cut/page.json', 1000);
  status.catch(() => undefined); // the request fails: it is destroyed below
  request.write(Buffer.alloc(500, 'x'));
  await new Promise((resolve) => setTimeout(resolve, 200));
  request.destroy();
  await new Promise((resolve) => setTimeout(resolve, 200)); // the server sees the connection close
  assert.equal((await storage.get('cut/page.json')).toString(), '{"old":true}');
  const listed: string[] = [];
  for await (const { key } of storage.list('cut/', { recursive: true })) listed.push(key);
  assert.deepEqual(listed, ['cut/page.json']);
});
