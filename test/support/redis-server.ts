// Redis for the queue tests: a private server per test file, in a container where a container
// runtime answers (test-services.ts), else the redis-server child process `scriptorium run` starts;
// a reason to skip the tests when neither can run; and, for the fault tests, a local one with an
// append-only file that can be killed and started again.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { after, before } from 'node:test';

import { Redis } from 'ioredis';

import { freePort, startEmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { startRedisContainer, TEST_SERVICES, type ContainerServer } from './test-services.js';

/** false when redis-server can run; otherwise why the tests that start it are skipped (for `describe(…, { skip })`). */
export const REDIS_SERVER_MISSING: string | false =
  spawnSync('redis-server', ['--version']).error === undefined
    ? false
    : 'redis-server is not installed (apt-get install redis-server): the queue tests need a real Redis';

/** false when useTestRedis can start a server, in a container or as a child process; otherwise why not. */
export const TEST_REDIS_MISSING: string | false = TEST_SERVICES.source === 'containers' ? false : REDIS_SERVER_MISSING;

export interface TestRedis {
  /** redis://127.0.0.1:<port>, once the server has started. */
  readonly url: string;
  /** Removes every key: each test starts from empty queues. */
  flush(): Promise<void>;
}

/** Starts a private Redis before the enclosing suite's tests and stops it after them. */
export function useTestRedis(): TestRedis {
  let server: ContainerServer | undefined;
  before(async () => {
    server = TEST_SERVICES.source === 'containers' ? await startRedisContainer() : await startEmbeddedRedis();
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

/** A redis-server that keeps its data in an append-only file and can be killed and started again where it was. */
export interface PersistentRedis {
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL by default, as a crash) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port with the same directory, once it has been killed. */
  start(): Promise<void>;
  /** Stops the server. The directory is the caller's. */
  close(): Promise<void>;
}

/**
 * A redis-server child process with `appendonly yes` and `appendfsync always` (every acknowledged
 * write is on disk, so even SIGKILL loses nothing) in `dir`, on a port that was free when it started.
 */
export async function startPersistentRedis(dir: string): Promise<PersistentRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'];
  args.push('--maxmemory-policy', 'noeviction', '--dir', dir, '--loglevel', 'warning');
  let child: ChildProcess | undefined;
  const exited = (process: ChildProcess) =>
    new Promise<void>((resolve) => (process.exitCode !== null || process.signalCode !== null ? resolve() : process.once('exit', () => resolve())));
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const running = child;
    child = undefined;
    if (running === undefined) return;
    running.kill(signal);
    await exited(running);
  };
  const start = async () => {
    if (child !== undefined) throw new Error('the persistent redis-server is already running');
    child = spawn('redis-server', args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => undefined);
      const answered = await client
        .connect()
        .then(() => client.ping())
        .then(
          (reply) => reply === 'PONG',
          () => false,
        )
        .finally(() => client.disconnect());
      if (answered) return;
      if (Date.now() > deadline) throw new Error(`redis-server with the append-only file in ${dir} did not answer on port ${port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  process.once('exit', () => child?.kill('SIGKILL'));
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, kill, start, close: () => kill('SIGTERM') };
}
