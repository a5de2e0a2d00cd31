// A private redis-server child process for `scriptorium run` and the tests: loopback only, on a
// free port, nothing persisted (no RDB, no AOF, working directory in a fresh temp folder), and
// `noeviction` as BullMQ requires. It runs in a process group of its own, so that the Ctrl-C a
// terminal sends to `scriptorium run`'s group does not stop it under the workers that still need it;
// it is stopped by close(), killed when this process exits, and stopped by a reaper when this process
// is killed outright (kill -9 runs no exit handler).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface EmbeddedRedisOptions {
  /** The redis-server executable. Default: `redis-server` on the PATH. */
  executable?: string;
  /** How long to wait for the server's first PONG. Default 10 s. */
  startTimeoutMs?: number;
}

export interface EmbeddedRedis {
  /** redis://127.0.0.1:<port> */
  url: string;
  port: number;
  /** Stops the server (SIGTERM, then waits for it to exit) and removes its directory. */
  close(): Promise<void>;
}

export class RedisServerMissingError extends Error {
  override readonly name = 'RedisServerMissingError';
}

/** Tries on other ports when another process takes the chosen free port first. */
const PORT_ATTEMPTS = 3;
const PING_INTERVAL_MS = 25;

export async function startEmbeddedRedis(options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
  const executable = options.executable ?? 'redis-server';
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-redis-'));
  try {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const child = spawn(executable, serverArguments(port, dir), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      const output: string[] = [];
      child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      const started = await waitUntilServing(child, port, startTimeoutMs, executable);
      if (started === 'serving') return running(child, port, dir);
      const log = output.join('').trim();
      if (/address already in use/i.test(log) && attempt < PORT_ATTEMPTS) continue;
      throw new Error(`${executable} did not start on port ${port}${log ? `: ${log}` : ''}`);
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function serverArguments(port: number, dir: string): string[] {
  return [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--protected-mode', 'yes',
    '--save', '',
    '--appendonly', 'no',
    '--maxmemory-policy', 'noeviction',
    '--dir', dir,
    '--loglevel', 'warning',
  ];
}

/** A port that was free a moment ago: redis-server cannot listen on port 0 and report the port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** 'serving' at the first PONG; 'exited' when the child ends first; rejects on timeout or a missing executable. */
function waitUntilServing(child: ChildProcess, port: number, timeoutMs: number, executable: string): Promise<'serving' | 'exited'> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (action: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      action();
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      settle(() => reject(new Error(`${executable} did not answer PING on port ${port} within ${timeoutMs} ms`)));
    }, timeoutMs);
    child.once('error', (error: NodeJS.ErrnoException) =>
      settle(() =>
        reject(
          error.code === 'ENOENT'
            ? new RedisServerMissingError(`${executable} is not installed: install it (apt-get install redis-server) or set REDIS_URL to a running Redis`)
            : error,
        ),
      ),
    );
    child.once('exit', () => settle(() => resolve('exited')));
    const poll = async () => {
      while (!settled) {
        if (await answersPing(port)) return settle(() => resolve('serving'));
        await new Promise((wake) => setTimeout(wake, PING_INTERVAL_MS));
      }
    };
    void poll();
  });
}

/** One PING over a fresh connection; true when the answer is +PONG. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

/**
 * A shell that stops the server once this process is gone, however it ended: its stdin is a pipe
 * from this process, whose end (this process exiting or killed) ends its `read`. In a group of its
 * own, like the server, so that a Ctrl-C leaves it be; it holds no reference on the event loop.
 */
function startReaper(server: ChildProcess): ChildProcess {
  const reaper = spawn('/bin/sh', ['-c', `read ignored; kill -TERM ${server.pid}`], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  reaper.on('error', () => undefined); // without a reaper, only a kill -9 of this process leaves the server behind
  reaper.stdin?.on('error', () => undefined);
  (reaper.stdin as unknown as { unref(): void } | null)?.unref();
  reaper.unref();
  return reaper;
}

function running(child: ChildProcess, port: number, dir: string): EmbeddedRedis {
  const reaper = startReaper(child);
  const killOnExit = () => {
    reaper.kill('SIGKILL');
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const alive = () => child.exitCode === null && child.signalCode === null;
  const exited = new Promise<void>((resolve) => (alive() ? child.once('exit', () => resolve()) : resolve()));
  let closing: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    close() {
      closing ??= (async () => {
        process.off('exit', killOnExit);
        reaper.kill('SIGKILL'); // first: once the server has exited its pid may be another process's
        if (alive()) child.kill('SIGTERM');
        await exited;
        await rm(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
