// Redis for the queue tests: a private redis-server child process per test file (the one
// `scriptorium run` starts), or a reason to skip the tests when redis-server is not installed.
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';

import { Redis } from 'ioredis';

import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';

/** false when redis-server can run; otherwise why the queue tests are skipped (for `describe(…, { skip })`). */
export const REDIS_SERVER_MISSING: string | false =
  spawnSync('redis-server', ['--version']).error === undefined
    ? false
    : 'redis-server is not installed (apt-get install redis-server): the queue tests need a real Redis';

export interface TestRedis {
  /** redis://127.0.0.1:<port>, once the server has started. */
  readonly url: string;
  /** Removes every key: each test starts from empty queues. */
  flush(): Promise<void>;
}

/** Starts a private redis-server before the enclosing suite's tests and stops it after them. */
export function useTestRedis(): TestRedis {
  let server: EmbeddedRedis | undefined;
  before(async () => {
    server = await startEmbeddedRedis();
  });
  after(() => server?.close());
  const started = () => {
    if (server === undefined) throw new Error('the test Redis has not started');
    return server;
  };
  return {
    get url() {
      return started().url;
    },
    async flush() {
      const client = new Redis(started().url);
      try {
        await client.flushall();
      } finally {
        client.disconnect();
      }
    },
  };
}
