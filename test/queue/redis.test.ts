// Redis settings from URLs, the reachability check, the private redis-server, and the job ids
// and queue names BullMQ accepts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { describe, test } from 'node:test';

import { startEmbeddedRedis, RedisServerMissingError } from '../../src/queue/embedded-redis.js';
import { documentJobId, pageJobId, pagesOfJobId } from '../../src/queue/job-ids.js';
import { DOCUMENTS, jobIdOfKey, jobKey, pageJobIdOfKey, PAGE_QUEUES, pageQueue } from '../../src/queue/queue-names.js';
import { checkRedisReachable, redactedRedisUrl, redisOptions, redisUrlFromEnv } from '../../src/queue/redis.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';

test('REDIS_URL defaults to redis://127.0.0.1:6379', () => {
  assert.equal(redisUrlFromEnv({}), 'redis://127.0.0.1:6379');
  assert.equal(redisUrlFromEnv({ REDIS_URL: '  ' }), 'redis://127.0.0.1:6379');
  assert.equal(redisUrlFromEnv({ REDIS_URL: 'redis://queue:6380' }), 'redis://queue:6380');
});

test('a URL gives host, port, database and credentials', () => {
  assert.deepEqual(redisOptions('redis://user:p%40ss@queue.internal:6380/2', 'client'), {
    host: 'queue.internal',
    port: 6380,
    db: 2,
    username: 'user',
    password: 'p@ss',
  });
  assert.deepEqual(redisOptions('redis://localhost', 'client'), { host: 'localhost', port: 6379, db: 0 });
});

test('rediss:// turns TLS on', () => {
  assert.deepEqual(redisOptions('rediss://queue.example:6380', 'client').tls, { servername: 'queue.example' });
});

test('worker connections never give up on a command, as BullMQ requires', () => {
  assert.equal(redisOptions('redis://localhost', 'worker').maxRetriesPerRequest, null);
  assert.equal('maxRetriesPerRequest' in redisOptions('redis://localhost', 'client'), false);
});

test('other schemes and bad databases are refused with the expected form', () => {
  assert.throws(() => redisOptions('http://localhost:6379', 'client'), /unsupported Redis URL scheme "http:" .*redis:\/\/\[user:password@\]host/);
  assert.throws(() => redisOptions('localhost:6379', 'client'), /unsupported Redis URL scheme "localhost:"/);
  assert.throws(() => redisOptions('redis://localhost/x', 'client'), /database .* must be a number >= 0/);
});

test('passwords are left out of URLs shown to people', () => {
  assert.equal(redactedRedisUrl('redis://user:secret@queue:6379/1'), 'redis://user:***@queue:6379/1');
});

test('a Redis that does not answer is reported with what to do', async () => {
  const port = await closedPort();
  await assert.rejects(checkRedisReachable(`redis://127.0.0.1:${port}`), /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+\/? \(.+\): start one .*REDIS_URL.*scriptorium run/);
});

test('a missing redis-server executable says how to install it', async () => {
  await assert.rejects(
    startEmbeddedRedis({ executable: 'scriptorium-no-such-redis-server' }),
    (error: unknown) => error instanceof RedisServerMissingError && /apt-get install redis-server.*REDIS_URL/.test(error.message),
  );
});

describe('the private redis-server', { skip: REDIS_SERVER_MISSING }, () => {
  test('answers on loopback with noeviction, and close() stops it and removes its folder', async () => {
    const redis = await startEmbeddedRedis();
    await checkRedisReachable(redis.url);
    const { Redis } = await import('ioredis');
    const client = new Redis(redis.url);
    const [, policy] = (await client.config('GET', 'maxmemory-policy')) as string[];
    const [, dir] = (await client.config('GET', 'dir')) as string[];
    client.disconnect();
    assert.equal(policy, 'noeviction');
    await redis.close();
    assert.equal(existsSync(dir), false);
    await assert.rejects(checkRedisReachable(redis.url), /cannot reach Redis/);
  });
});

test('page job ids carry their pages and contain no colon (BullMQ refuses it)', () => {
  const docId = '0123456789abcdef0123456789abcdef';
  assert.equal(documentJobId(docId), docId);
  assert.equal(pageJobId(docId, 3, 3), `${docId}.p3-3`);
  assert.deepEqual(pagesOfJobId(pageJobId(docId, 1, 12)), { docId, firstPage: 1, lastPage: 12 });
  assert.equal(pagesOfJobId(docId), undefined);
});

test("the queues' Redis keys are {scriptorium}:documents:… and one {scriptorium}:pages-<variant>:… per variant", () => {
  assert.deepEqual([DOCUMENTS, ...PAGE_QUEUES], [
    { prefix: '{scriptorium}', name: 'documents' },
    { prefix: '{scriptorium}', name: 'pages-v1' },
    { prefix: '{scriptorium}', name: 'pages-v2' },
    { prefix: '{scriptorium}', name: 'pages-v3' },
  ]);
  assert.equal(jobKey(pageQueue('v3'), 'abc.p1-1'), '{scriptorium}:pages-v3:abc.p1-1');
  assert.equal(jobIdOfKey(pageQueue('v3'), '{scriptorium}:pages-v3:abc.p1-1'), 'abc.p1-1');
  assert.equal(jobIdOfKey(pageQueue('v3'), '{scriptorium}:pages-v1:abc.p1-1'), undefined);
  assert.equal(jobIdOfKey(pageQueue('v3'), '{scriptorium}:documents:abc'), undefined);
});

test('a page job id is found in a job key of any page queue, and only there', () => {
  assert.equal(pageJobIdOfKey('{scriptorium}:pages-v1:abc.p2-2'), 'abc.p2-2');
  assert.equal(pageJobIdOfKey('{scriptorium}:pages-v3:abc.p1-12'), 'abc.p1-12');
  assert.equal(pageJobIdOfKey('{scriptorium}:documents:abc'), undefined);
  assert.equal(pageJobIdOfKey('{scriptorium}:pages:abc.p1-1'), undefined);
});

/** A port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
