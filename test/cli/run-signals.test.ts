// `scriptorium run` stopped as a terminal stops it: signals sent to its whole process group, as
// Ctrl-C does. The private redis-server lives in a group of its own, so the first Ctrl-C lets the
// claimed pages finish and the run stop cleanly; a second stops at once and says what is left; a
// SIGTERM during start-up prints the same stopping line. The private Redis is gone afterwards, also
// after a kill -9 of the run.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';

import { fullQueueName, pageQueue } from '../../src/queue/queue-names.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { MAIN, waitUntil } from '../support/worker-processes.js';

const PRIVATE_REDIS = /a private Redis at (redis:\/\/127\.0\.0\.1:\d+)/;

class RunProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stdout = '';
  stderr = '';

  constructor(input: string, out: string, model: string) {
    const env = { ...process.env };
    delete env.REDIS_URL;
    const args = [MAIN, 'run', input, '--out', out, '--model', model, '--mode', 'base', '--dpi', '72', '--max-tokens', '16', '--threads', '1', '--batch', '2'];
    // A group of its own, as a shell gives a foreground job: the signals below go to the whole group.
    this.child = spawn(process.execPath, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  /** What a terminal's Ctrl-C does: the signal to every process of the foreground group. */
  signalGroup(signal: NodeJS.Signals): void {
    process.kill(-this.child.pid!, signal);
  }

  async redisUrl(): Promise<string> {
    await waitUntil(() => PRIVATE_REDIS.test(this.stderr), 60_000, `the private Redis URL on stderr:\n${this.stderr}`);
    return PRIVATE_REDIS.exec(this.stderr)![1];
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.signalGroup('SIGKILL');
  }
}

// A run that never exits (as before the private Redis had a group of its own) fails instead of hanging.
describe('scriptorium run stopped by signals', { skip: REDIS_SERVER_MISSING, timeout: 120_000 }, () => {
  let root: string;
  let model: string;
  let input: string;
  const runs: RunProcess[] = [];

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-run-signals-'));
    model = await tinyCheckpoint('v1');
    input = path.join(root, 'six-pages.pdf');
    await writeFile(input, await makePdf(Array.from({ length: 6 }, () => LETTER), 8));
  });
  after(async () => {
    for (const run of runs) run.kill();
    await rm(root, { recursive: true, force: true });
  });

  function start(name: string): RunProcess {
    const run = new RunProcess(input, path.join(root, name), model);
    runs.push(run);
    return run;
  }

  /** Resolves once the run's worker holds a page job. */
  async function untilPagesClaimed(url: string): Promise<void> {
    const client = new Redis(url);
    try {
      await waitUntil(async () => (await client.llen(`${fullQueueName(pageQueue('v1'))}:active`)) > 0, 60_000, 'a claimed page');
    } finally {
      client.disconnect();
    }
  }

  async function answers(url: string): Promise<boolean> {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }

  test('the first Ctrl-C finishes the claimed pages and stops; the private Redis goes with it', async () => {
    const run = start('first');
    const url = await run.redisUrl();
    await untilPagesClaimed(url);
    run.signalGroup('SIGINT');
    assert.equal(await run.exited, 130, run.stderr);
    const stopping = /SIGINT: stopping: no new pages are taken, the (\d+) being read finish first/.exec(run.stderr);
    assert.ok(stopping, run.stderr);
    assert.match(run.stderr, /scriptorium run: stopped$/m);
    assert.doesNotMatch(run.stderr, /ECONNREFUSED|Connection is closed/);
    const docs = await readdir(path.join(root, 'first', 'results'));
    const stored = (await readdir(path.join(root, 'first', 'results', docs[0], 'pages'))).filter((name) => name.endsWith('.json'));
    assert.ok(stored.length >= Number(stopping[1]) && stored.length > 0, `${stored.length} pages stored, ${stopping[1]} were being read`);
    assert.equal(await answers(url), false, 'the private Redis still runs');
  });

  test('a second Ctrl-C stops at once and says what is left for the next run', async () => {
    const run = start('second');
    const url = await run.redisUrl();
    await untilPagesClaimed(url);
    run.signalGroup('SIGINT');
    await waitUntil(() => run.stderr.includes('SIGINT: stopping'), 30_000, 'the stopping line');
    run.signalGroup('SIGINT');
    assert.equal(await run.exited, 130, run.stderr);
    assert.match(run.stderr, /SIGINT again: stopped at once with 1 document unfinished: the same command again reads them/);
    assert.equal(await answers(url), false, 'the private Redis still runs');
  });

  test('kill -9 of the whole run leaves no private Redis behind', async () => {
    const run = start('killed');
    const url = await run.redisUrl();
    run.signalGroup('SIGKILL'); // the private Redis has a group of its own: this does not reach it
    await run.exited;
    await waitUntil(async () => !(await answers(url)), 30_000, 'the private Redis to stop');
  });

  test('SIGTERM during start-up prints the same stopping line and queues nothing', async () => {
    const run = start('start-up');
    const url = await run.redisUrl();
    run.signalGroup('SIGTERM');
    assert.equal(await run.exited, 130, run.stderr);
    assert.match(run.stderr, /SIGTERM: stopping: no new pages are taken/);
    assert.doesNotMatch(run.stdout, /^queued/m);
    assert.equal(await answers(url), false, 'the private Redis still runs');
  });
});
