// `scriptorium dashboard` against a private redis-server: bull-board's page and API over both queues,
// /healthz following Redis, start-up errors that hide the Redis password, and a clean stop on SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { dashboardCommand } from '../../src/cli/dashboard-command.js';
import { UsageError } from '../../src/cli/usage.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import { startDashboard, type Dashboard } from '../../src/server/dashboard-server.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';


const silent = pino({ level: 'silent' });

/** Log lines written by a pino logger, parsed. */
function capturedLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: pino(sink), lines };
}

describe('scriptorium dashboard with Redis', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let dashboard: Dashboard;
  const log = capturedLogger();

  before(async () => {
    redis = await startEmbeddedRedis();
    for (const queue of [DOCUMENTS, pageQueue('v1'), pageQueue('v3')]) {
      const producer = new Queue(queue.name, { connection: redisOptions(redis.url, 'client'), prefix: queue.prefix });
      await producer.add(`${queue.name}-job`, { docId: 'doc-1' });
      await producer.close();
    }
    dashboard = await startDashboard({ redisUrl: redis.url, host: '127.0.0.1', port: 0, logger: log.logger });
  });

  after(async () => {
    await dashboard?.close();
    await redis?.close();
  });

  test('logs the URL it serves and the Redis it reads', () => {
    assert.match(dashboard.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const started = log.lines.find((line) => line.url !== undefined);
    assert.deepEqual({ url: started?.url, redis: started?.redis }, { url: dashboard.url, redis: redis.url });
  });

  test('GET / serves the bull-board page', async () => {
    const response = await fetch(dashboard.url);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await response.text(), /<title>Bull Dashboard<\/title>/);
  });

  test('GET /api/queues lists the documents queue and every page queue, writable, with their waiting jobs', async () => {
    const response = await fetch(new URL('api/queues', dashboard.url));
    assert.equal(response.status, 200);
    const body = (await response.json()) as { queues: { name: string; displayName: string; counts: Record<string, number>; readOnlyMode: boolean; allowRetries: boolean }[] };
    const queues = body.queues
      .map(({ name, displayName, counts, readOnlyMode, allowRetries }) => ({ name, displayName, waiting: counts.waiting, readOnlyMode, allowRetries }))
      .sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(queues, [
      { name: 'documents', displayName: '{scriptorium}:documents', waiting: 1, readOnlyMode: false, allowRetries: true },
      { name: 'pages-v1', displayName: '{scriptorium}:pages-v1', waiting: 1, readOnlyMode: false, allowRetries: true },
      { name: 'pages-v2', displayName: '{scriptorium}:pages-v2', waiting: 0, readOnlyMode: false, allowRetries: true },
      { name: 'pages-v3', displayName: '{scriptorium}:pages-v3', waiting: 1, readOnlyMode: false, allowRetries: true },
    ]);
  });

  test('GET /healthz is 200 {"redis":"ok"} while Redis answers PING', async () => {
    const response = await fetch(new URL('healthz', dashboard.url));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { redis: 'ok' });
  });

  test('GET /healthz is 503 once Redis is gone', async () => {
    await redis.close();
    const response = await fetch(new URL('healthz', dashboard.url));
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), { redis: 'unreachable' });
  });

  test('close() stops the server even while Redis is gone', async () => {
    await dashboard.close();
    await assert.rejects(fetch(new URL('healthz', dashboard.url)));
  });
});

describe('scriptorium dashboard start-up', () => {
  test('an unreachable Redis fails the start with its password masked', async () => {
    const error = await startDashboard({ redisUrl: 'redis://reader:hunter2@127.0.0.1:1', host: '127.0.0.1', port: 0, logger: silent }).then(
      () => assert.fail('the dashboard started without Redis'),
      (caught: Error) => caught,
    );
    assert.match(error.message, /cannot reach Redis at redis:\/\/reader:\*\*\*@127\.0\.0\.1:1/);
    assert.doesNotMatch(error.message, /hunter2/);
  });

  test('--port above 65535 is a usage error', async () => {
    await assert.rejects(dashboardCommand.run(['--port', '70000']), (error: Error) => error instanceof UsageError && /^--port must be a port number from 0 to 65535 \(got "70000"\)$/.test(error.message));
  });

  test('a DASHBOARD_PORT that is not a number is a usage error naming it', async () => {
    const saved = process.env.DASHBOARD_PORT;
    process.env.DASHBOARD_PORT = 'eighty';
    try {
      await assert.rejects(dashboardCommand.run([]), (error: Error) => error instanceof UsageError && /^DASHBOARD_PORT must be a port number from 0 to 65535 \(got "eighty"\)$/.test(error.message));
    } finally {
      if (saved === undefined) delete process.env.DASHBOARD_PORT;
      else process.env.DASHBOARD_PORT = saved;
    }
  });
});

describe('scriptorium dashboard process', { skip: REDIS_SERVER_MISSING }, () => {
  test('SIGTERM closes the server and the connections, and the process exits 0', { timeout: 30_000 }, async () => {
    const redis = await startEmbeddedRedis();
    const command = new URL('../../src/cli/dashboard-command.js', import.meta.url).href;
    const script = `import { dashboardCommand } from ${JSON.stringify(command)}; process.exitCode = await dashboardCommand.run(['--port', '0']);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, REDIS_URL: redis.url }, stdio: ['ignore', 'inherit', 'pipe'] });
    const exited = once(child, 'exit');
    try {
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const started = /"url":"([^"]+)"/.exec(output);
          if (started) resolve(started[1]);
        });
        child.once('exit', (code) => reject(new Error(`the dashboard exited (${code}) before it logged its URL:\n${output}`)));
      });
      assert.equal((await fetch(new URL('healthz', url))).status, 200);
      child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0);
      assert.match(output, /"signal":"SIGTERM"/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await redis.close();
    }
  });
});
