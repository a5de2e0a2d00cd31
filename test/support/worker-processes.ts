// `scriptorium work` as child processes, for the tests where a worker must die: the built CLI,
// with the fault-engine preload when asked, its JSON log lines kept; and a supervisor that starts a
// fresh worker whenever one exits, as systemd or Kubernetes would.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const FAULT_ENGINE = fileURLToPath(new URL('./fault-engine.js', import.meta.url));

export interface WorkerProcessOptions {
  /** Arguments after `work`. */
  args: string[];
  /** Added to this process's environment (REDIS_URL, SCRIPTORIUM_TEST_FAULT, …). */
  env?: NodeJS.ProcessEnv;
  /** Preload the fault-engine (see fault-engine.ts). */
  faults?: boolean;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  #stderr = '';
  readonly #watchers = new Set<() => void>();

  constructor(options: WorkerProcessOptions) {
    const preload = options.faults ? ['--import', FAULT_ENGINE] : [];
    this.child = spawn(process.execPath, [...preload, MAIN, 'work', ...options.args], {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString();
      for (const watcher of [...this.#watchers]) watcher();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get stderr(): string {
    return this.#stderr;
  }

  /** The pino log lines written so far. */
  logLines(): Array<Record<string, unknown>> {
    return this.#stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Resolves once stderr contains `text`; rejects when the process exits first or after timeoutMs. */
  waitForOutput(text: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const finish = (error?: Error) => {
        this.#watchers.delete(check);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const check = () => {
        if (this.#stderr.includes(text)) finish();
      };
      const timer = setTimeout(() => finish(new Error(`no "${text}" from the worker within ${timeoutMs} ms; its stderr:\n${this.#stderr}`)), timeoutMs);
      void this.exited.then(({ code, signal }) => {
        if (!this.#stderr.includes(text)) finish(new Error(`the worker exited (${signal ?? code}) before writing "${text}"; its stderr:\n${this.#stderr}`));
      });
      this.#watchers.add(check);
      check();
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited after timeoutMs. */
  async stop(timeoutMs = 20_000): Promise<Exit> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    return this.exited;
  }
}

/** Keeps `count` workers running: a worker that exits is replaced by a fresh one until stop(). */
export class WorkerSupervisor {
  readonly workers: WorkerProcess[] = [];
  /** How each worker ended, in the order they did (after stop(): all of them). */
  readonly exits: Exit[] = [];
  readonly #options: WorkerProcessOptions;
  #stopping = false;

  constructor(count: number, options: WorkerProcessOptions) {
    this.#options = options;
    for (let i = 0; i < count; i++) this.#spawn();
  }

  /** Every worker's log lines, in start order. */
  logLines(): Array<Record<string, unknown>> {
    return this.workers.flatMap((worker) => worker.logLines());
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.workers.map((worker) => worker.stop()));
  }

  #spawn(): void {
    const worker = new WorkerProcess(this.#options);
    this.workers.push(worker);
    void worker.exited.then((exit) => {
      this.exits.push(exit);
      if (!this.#stopping) this.#spawn();
    });
  }
}

/** Polls `condition` until it holds; rejects with `what` after timeoutMs. */
export async function waitUntil(condition: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
