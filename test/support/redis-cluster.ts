// A private Redis Cluster for the tests: three redis-server processes in cluster mode on loopback,
// each a master, their slots assigned by `redis-cli --cluster create`, nothing persisted, in one
// container where a container runtime answers (test-services.ts), else as local child processes; or
// a reason to skip when neither can run.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { Redis } from 'ioredis';

import { freePort } from '../../src/queue/embedded-redis.js';
import { REDIS_SERVER_MISSING } from './redis-server.js';
import { startRedisClusterContainer, TEST_SERVICES } from './test-services.js';

/** false when a cluster can be started; otherwise why the cluster tests are skipped. */
export const REDIS_CLUSTER_MISSING: string | false =
  TEST_SERVICES.source === 'containers'
    ? false
    : REDIS_SERVER_MISSING ||
      (spawnSync('redis-cli', ['--version']).error === undefined ? false : 'redis-cli is not installed (apt-get install redis-tools): the cluster tests need it');

export interface TestRedisCluster {
  /** redis-cluster://127.0.0.1:<port>,… naming every master. */
  url: string;
  ports: number[];
  /** Removes every key on every master. */
  flush(): Promise<void>;
  /** Stops the servers and removes what they kept. */
  close(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;

/** Starts `masters` cluster-mode redis-servers, joins them into one cluster and waits for cluster_state:ok. */
export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  if (TEST_SERVICES.source === 'local') return startLocalCluster(masters);
  const ports: number[] = [];
  for (let i = 0; i < masters; i++) ports.push(await freePort());
  const close = await startRedisClusterContainer(ports);
  try {
    return await ready(ports, close);
  } catch (error) {
    await close();
    throw error;
  }
}

async function startLocalCluster(masters: number): Promise<TestRedisCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-redis-cluster-'));
  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((child) => child.kill('SIGKILL'));
  process.once('exit', killAll);
  const close = async () => {
    process.off('exit', killAll);
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      ports.push(port);
      children.push(
        spawn(
          'redis-server',
          [
            '--port', String(port),
            '--bind', '127.0.0.1',
            '--cluster-enabled', 'yes',
            '--cluster-config-file', path.join(dir, `nodes-${port}.conf`),
            '--dir', dir,
            '--save', '',
            '--appendonly', 'no',
            '--maxmemory-policy', 'noeviction',
            '--loglevel', 'warning',
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) await waitFor(port, async (client) => (await client.ping()) === 'PONG');
    await promisify(execFile)('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-yes']);
    return await ready(ports, close);
  } catch (error) {
    await close();
    throw error;
  }
}

/** The cluster on `ports`, once every node reports cluster_state:ok. */
async function ready(ports: number[], close: () => Promise<void>): Promise<TestRedisCluster> {
  for (const port of ports) await waitFor(port, async (client) => String(await client.cluster('INFO')).includes('cluster_state:ok'));
  return {
    url: `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
    ports,
    async flush() {
      for (const port of ports) {
        const client = new Redis({ port, host: '127.0.0.1' });
        try {
          await client.flushall();
        } finally {
          client.disconnect();
        }
      }
    },
    close,
  };
}

/** Polls the node on `port` until `ready` holds. */
async function waitFor(port: number, ready: (client: Redis) => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    const ok = await client
      .connect()
      .then(() => ready(client))
      .catch(() => false)
      .finally(() => client.disconnect());
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the Redis Cluster node on port ${port} was not ready within ${START_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
