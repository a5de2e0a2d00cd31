// The chaos soak: --pages page jobs of mixed documents (V1 and V3, 1 to 30 pages) enqueued through the
// producer into a private redis-server with an append-only file, read by --workers job slots spread
// over --processes `scriptorium work` child processes whose ENGINE IS REPLACED BY A STATED DELAY
// (delay-engine.ts), results written to an in-process S3 server; and all the while, faults at seeded
// random intervals: kill -9 of a worker process (restarted, as a supervisor would; never the first,
// which lives the whole run so that its memory is judged), Redis killed and
// restarted from its append-only file, one failover to an EMPTY Redis followed by `scriptorium
// reconcile`, storage refusing or stalling every request for seconds, and slow storage; every other
// worker process runs with its clock skewed (skewed-clock.ts). At the end it audits storage and Redis
// and exits 1 when the audit fails, printing the worker log lines of the first documents at fault and
// keeping the workers' logs. With --no-faults it throws none: a run of the worker processes' memory alone.
//   npm run soak [-- --short] [--pages N] [--workers W] [--processes P] [--seed S] [--delay-ms D] [--no-faults]
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { PDFDocument, StandardFonts } from 'pdf-lib';

import { defineCommand, type CommandLine } from '../../src/cli/command-line.js';
import { flag, integer } from '../../src/cli/options.js';
import { exitWith, runCommandLine } from '../../src/cli/usage.js';
import { synthCheckpoint } from '../../src/model/synth/synth-checkpoint.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { redisOptions } from '../../src/queue/redis.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { startPersistentRedis, type PersistentRedis } from '../../test/support/redis-server.js';
import { S3RVER_SECRET, startS3Server } from '../../test/support/s3-server.js';
import { seededRandom } from '../../test/support/seeded-random.js';
import { FaultProxy } from './fault-proxy.js';
import { auditResults, countMarkerWrite, memoryGrowth, undrainedQueues, type MarkerWrites, type SoakDocument } from './soak-audit.js';

const USAGE = `Usage: npm run soak -- [--short] [--pages N] [--workers W] [--processes P] [--seed S] [--delay-ms D] [--fault-every S] [--no-faults] [--timeout S]

Enqueues N page jobs (default 100000; --short: 2000) of V1 and V3 documents of 1 to 30 pages, reads
them with W job slots (default 32; --short: 16) over P \`scriptorium work\` processes (default 8;
--short: 4) whose engine step is a D ms delay (default 50), while faults are thrown every S seconds
on average (default 20; --short: 6), seeded by --seed (default 1); then audits the results and Redis.
--no-faults throws none (no failover either): each worker process then lives the whole run, which
measures its memory alone. Each worker process's resident memory is printed every minute. Gives up
after --timeout seconds (default 7200; --short: 900). Exit status 1 when the audit fails.`;

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const DELAY_ENGINE = fileURLToPath(new URL('./delay-engine.js', import.meta.url));
const SKEWED_CLOCK = fileURLToPath(new URL('./skewed-clock.js', import.meta.url));
/** Every other worker process's clock runs this far ahead or behind at most (drawn from the seed). */
const MAX_CLOCK_SKEW_MS = 30_000;
const BUCKET = 'soak';
const VARIANTS: readonly Variant[] = ['v3', 'v1'];
const PAGE_COUNTS = [1, 2, 3, 5, 8, 12, 30];
/** The product's safe minimum: a killed worker's pages are taken over after 10 s instead of 2 minutes. */
const LOCK_DURATION_S = 10;
const STALLED_INTERVAL_S = 5;
const RSS_EVERY_MS = 5_000;
const RSS_PRINTED_EVERY_MS = 60_000;
// A worker's RSS rises for its first 45 minutes or so (heap, connections, buffers) before it levels
// off: two processes that lived two hours without faults rose from about 250 to 300 MiB by then and
// stayed within 294 to 324 MiB after. A process is judged a quarter of an hour past that: a leak of
// the kind this guards against (1.5 GB an hour) adds some 380 MiB in that time.
const WARM_UP_MS = 45 * 60_000;
const JUDGED_AFTER_MS = 15 * 60_000;
const FAILOVER_AFTER_SHARE = 0.3;
/** How long the audit waits for the queues to drain after the last assembly. */
const DRAIN_WAIT_MS = 60_000;
/** The documents with problems whose worker log lines a failed audit prints. */
const LOGGED_PROBLEM_DOCUMENTS = 3;

type FaultKind = 'kill -9 a worker' | 'Redis restart from its AOF' | 'storage refusing' | 'storage stalled' | 'storage slow';
const FAULT_KINDS: readonly FaultKind[] = ['kill -9 a worker', 'Redis restart from its AOF', 'storage refusing', 'storage stalled', 'storage slow'];
const FAILOVER = 'Redis failover to an empty instance, then reconcile';

const OPTIONS = {
  short: flag(),
  pages: integer({ min: 1 }),
  workers: integer({ min: 1 }),
  processes: integer({ min: 1 }),
  seed: integer({ min: 0 }).default(1),
  'delay-ms': integer({ min: 0 }).default(50),
  'fault-every': integer({ min: 1 }),
  'no-faults': flag(),
  timeout: integer({ min: 1 }),
};

async function main({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const short = values.short === true;
  const pages = values.pages ?? (short ? 2_000 : 100_000);
  const processes = values.processes ?? (short ? 4 : 8);
  const workers = Math.max(values.workers ?? (short ? 16 : 32), processes);
  const faultEveryMs = (values['fault-every'] ?? (short ? 6 : 20)) * 1000;
  const faultsOn = values['no-faults'] !== true;
  const timeoutMs = (values.timeout ?? (short ? 900 : 7200)) * 1000;
  const random = seededRandom(values.seed);
  const write = (line: string) => process.stdout.write(`${line}\n`);

  const root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-soak-'));
  process.env.AWS_ACCESS_KEY_ID = S3RVER_SECRET;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_SECRET;
  const s3 = await startS3Server({ buckets: [BUCKET] });
  // Each assembly ends with a marker, whose write the S3 server reports: whatever becomes of the worker that wrote it.
  const markers = new Map<string, MarkerWrites>();
  s3.onNotification(({ Records }) => Records.forEach(({ eventName, s3: { object } }) => eventName.startsWith('ObjectCreated') && countMarkerWrite(markers, object.key)));
  const storageProxy = await FaultProxy.start(s3.port);
  let redis = await startPersistentRedis(await makeDir(root, 'redis-a'));
  const redisProxy = await FaultProxy.start(redis.port);
  const redisUrl = `redis://127.0.0.1:${redisProxy.port}`;
  // The soak's own producer, reconcile and audit reach the S3 server directly; the workers go through the faults.
  const storage = openStorage(`s3://${BUCKET}`, { s3: { endpoint: s3.endpoint } }) as S3Storage;
  // The workers' logs, kept when the audit fails.
  const logs = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-soak-logs-'));
  const pool = new WorkerPool(processes, workers, random, logs);
  // Stopped by a signal, the soak exits at once: the exit takes its worker processes and Redis with it.
  const stop = (signal: NodeJS.Signals) => {
    write(`${signal}: the soak stops, and its worker processes and Redis with it; their logs are kept in ${logs}`);
    for (const folder of [root, s3.directory]) rmSync(folder, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const faults: string[] = [];
  try {
    write(`soak: ${pages} pages, ${workers} job slots over ${processes} worker processes, seed ${values.seed}, on ${os.cpus().length} CPUs (a shared machine)`);
    write(`THE ENGINE STEP IS REPLACED BY A ${values['delay-ms']} ms DELAY: no OCR runs; this soaks the queue, the storage and the recovery`);
    if (!faultsOn) write('--no-faults: no fault is thrown; this run measures the worker processes\' memory');
    const models = await syntheticModels(root);
    const inputs = await writeDocuments(root, pages, random);
    const env = {
      REDIS_URL: redisUrl,
      S3_ENDPOINT: `http://127.0.0.1:${storageProxy.port}`,
      SCRIPTORIUM_BENCH_DELAY_MS: String(values['delay-ms']),
      LOG_LEVEL: 'info',
    };
    const skews = Array.from({ length: processes }, (_, index) => (index % 2 === 0 ? 0 : clockSkewMs(random)));
    write(`worker process clocks skewed by ${skews.map((ms) => `${ms / 1000} s`).join(', ')}`);
    pool.start((index) => ({
      variant: VARIANTS[index % VARIANTS.length],
      model: models[VARIANTS[index % VARIANTS.length]],
      env: { ...env, SCRIPTORIUM_BENCH_CLOCK_SKEW_MS: String(skews[index]) },
    }));

    // The faults start with the enqueue; the failover waits for it, and for part of the documents to be assembled.
    const started = performance.now();
    // Unreferenced: a soak that stops on an error is not kept alive by its minute lines.
    const rssPrinter = setInterval(() => write(`${elapsed(started)} ${pool.rssNow()}`), RSS_PRINTED_EVERY_MS).unref();
    let documents: SoakDocument[] | undefined;
    const enqueued = enqueueAll(inputs, storage, redisUrl, (line) => write(`${elapsed(started)} ${line}`)).then((queued) => {
      documents = queued;
      const pageCount = queued.reduce((sum, document) => sum + document.pages, 0);
      write(`${elapsed(started)} enqueued ${pageCount} pages of ${queued.length} documents`);
    });
    const assembled = () => (documents ?? []).filter((document) => markers.has(document.docId)).length;
    const finished = () => documents !== undefined && assembled() === documents.length;
    // Each round throws every kind once, in a seeded order.
    let failedOver = false;
    let round: FaultKind[] = [];
    const deadline = Date.now() + timeoutMs;
    while (!finished() && Date.now() < deadline) {
      await waitFor(faultsOn ? faultEveryMs * (0.5 + random()) : deadline - Date.now(), finished);
      if (finished() || !faultsOn) break;
      if (!failedOver && documents !== undefined && assembled() >= documents.length * FAILOVER_AFTER_SHARE) {
        failedOver = true;
        const at = elapsed(started);
        redis = await failover(redis, redisProxy, root, s3.endpoint, redisUrl);
        faults.push(`${at} ${FAILOVER} (${elapsed(started).trim()} when reconcile was done)`);
        write(`fault ${faults.at(-1)}`);
        continue;
      }
      if (round.length === 0) round = shuffled(FAULT_KINDS, random);
      const kind = round.pop()!;
      const at = elapsed(started);
      faults.push(`${at} ${await throwFault(kind, { pool, redis, storageProxy, random })}`);
      write(`fault ${faults.at(-1)}`);
    }
    clearInterval(rssPrinter);
    await enqueued;
    if (documents === undefined) throw new Error('the enqueue did not finish');
    const seconds = (performance.now() - started) / 1000;
    const pageCount = documents.reduce((sum, document) => sum + document.pages, 0);
    write(`faults thrown (${faults.length}):`);
    for (const fault of faults) write(`  ${fault}`);
    if (!failedOver && faultsOn) write(`  (no failover: the run ended before ${FAILOVER_AFTER_SHARE * 100}% of the documents were assembled)`);
    write(`${assembled()} of ${documents.length} documents assembled in ${seconds.toFixed(1)} s: ${(pageCount / seconds).toFixed(1)} pages/s, faults included`);

    const problems = await audit(documents, storage, redisUrl, pool, markers);
    pool.rssReport().forEach((line) => write(line));
    write(problems.length === 0 ? 'audit: PASSED' : `audit: FAILED (${problems.length} problems)`);
    for (const problem of problems.slice(0, 50)) write(`  ${problem}`);
    if (problems.length > 50) write(`  … and ${problems.length - 50} more`);
    if (problems.length === 0) {
      await rm(logs, { recursive: true, force: true });
      return 0;
    }
    const docIds = [...new Set(problems.flatMap((problem) => /^[0-9a-f]{32}(?=:)/.exec(problem) ?? []))];
    for (const docId of docIds.slice(0, LOGGED_PROBLEM_DOCUMENTS)) (await logLinesOf(logs, docId)).forEach(write);
    write(`the worker processes' logs are kept in ${logs}`);
    return 1;
  } finally {
    await pool.stop();
    storage.destroy();
    await redisProxy.close();
    await storageProxy.close();
    await redis.close();
    await s3.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * Enqueues every input through the producer, as `scriptorium enqueue` does, and runs it again when
 * Redis drops it mid-way (an operator would: documents queued already are left alone); returns every document.
 */
async function enqueueAll(inputs: Record<Variant, string>, storage: S3Storage, redisUrl: string, say: (line: string) => void): Promise<SoakDocument[]> {
  const documents: SoakDocument[] = [];
  for (const variant of VARIANTS) {
    for (;;) {
      try {
        const summary = await enqueueDocuments([inputs[variant]], {
          ocr: { variant, task: variant === 'v3' ? 'parse' : 'markdown', mode: 'tiny', dpi: 36 },
          storage,
          connection: redisOptions(redisUrl, 'client'),
        });
        if (summary.rejected.length > 0) throw new Error(`the producer rejected ${summary.rejected.length} documents: ${summary.rejected[0].reason}`);
        documents.push(...summary.queued.map(({ docId, pages }) => ({ docId, pages })));
        break;
      } catch (error) {
        if (!/ECONNREFUSED|ECONNRESET|Connection is closed|max retries|MaxRetriesPerRequest/i.test((error as Error).message)) throw error;
        say(`the ${variant} enqueue lost Redis (${(error as Error).message}); enqueueing again`);
        await sleep(1000);
      }
    }
  }
  return documents;
}

interface FaultTargets {
  pool: WorkerPool;
  redis: PersistentRedis;
  storageProxy: FaultProxy;
  random: () => number;
}

/** Throws one fault and waits until it is over; returns what it did. */
async function throwFault(kind: FaultKind, { pool, redis, storageProxy, random }: FaultTargets): Promise<string> {
  const seconds = 2 + Math.floor(random() * 5);
  switch (kind) {
    case 'kill -9 a worker':
      return `${kind}: process ${pool.killOne()}`;
    case 'Redis restart from its AOF':
      await redis.kill('SIGKILL');
      await sleep(seconds * 1000);
      await redis.start();
      return `${kind}: down ${seconds} s`;
    case 'storage refusing':
      storageProxy.mode = { kind: 'refuse' };
      break;
    case 'storage stalled':
      storageProxy.mode = { kind: 'stall' };
      break;
    case 'storage slow':
      storageProxy.mode = { kind: 'slow', delayMs: 200 };
      break;
  }
  await sleep(seconds * 1000);
  storageProxy.mode = { kind: 'pass' };
  return `${kind}: ${seconds} s`;
}

/** Sends Redis's clients to a fresh, empty redis-server, stops the old one, and runs `scriptorium reconcile`. */
async function failover(old: PersistentRedis, proxy: FaultProxy, root: string, s3Endpoint: string, redisUrl: string): Promise<PersistentRedis> {
  const fresh = await startPersistentRedis(await makeDir(root, 'redis-b'));
  proxy.retarget(fresh.port);
  await old.close();
  const env = { ...process.env, REDIS_URL: redisUrl, S3_ENDPOINT: s3Endpoint };
  const reconcile = spawn(process.execPath, [MAIN, 'reconcile', '--storage', `s3://${BUCKET}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  reconcile.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  reconcile.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => reconcile.once('exit', resolve));
  if (code !== 0) throw new Error(`scriptorium reconcile exited with ${code}:\n${output}`);
  return fresh;
}

/** Every page exactly once in storage, every document assembled exactly once, every failure with a reason and without a result, Redis drained, memory flat. */
async function audit(documents: readonly SoakDocument[], storage: S3Storage, redisUrl: string, pool: WorkerPool, markers: ReadonlyMap<string, MarkerWrites>): Promise<string[]> {
  const results = await auditResults(documents, storage, markers);
  process.stdout.write(`results: ${results.donePages} pages done, ${results.failedPages} failed; ${results.leftAttempts} uncommitted tries left\n`);
  const reasons = [...results.reasons].sort((a, b) => b[1] - a[1]);
  for (const [reason, count] of reasons.slice(0, 5)) process.stdout.write(`  ${count} failed: ${reason}\n`);
  process.stdout.write(`worker processes restarted: ${pool.exits.length}\n`);
  for (const exit of pool.exits) process.stdout.write(`  ${exit}\n`);
  return [...results.problems, ...(await undrainedQueues(redisUrl, VARIANTS, DRAIN_WAIT_MS)), ...pool.memoryProblems()];
}

interface WorkerSpec {
  variant: Variant;
  model: string;
  env: NodeJS.ProcessEnv;
}

/** One worker process's resident memory, sampled every RSS_EVERY_MS. */
interface RssSamples {
  pid: number;
  mib: number[];
}

/**
 * The `scriptorium work` processes, each restarted when it exits (as a supervisor would). Their logs
 * go to files; each process's last log line is kept, to say why one exited on its own.
 */
class WorkerPool {
  /** How each worker process that was restarted ended: its pid, exit code or signal, and its last log line when it was not killed by the soak. */
  readonly exits: string[] = [];
  readonly #processes: number;
  readonly #slots: number;
  readonly #random: () => number;
  readonly #logs: string;
  readonly #children: ChildProcess[] = [];
  readonly #rss: RssSamples[] = [];
  readonly #killed = new Set<number>();
  #stopping = false;
  #sampler: NodeJS.Timeout | undefined;

  /** Each process's stderr (its log) goes to `<logs>/worker-<pid>.log`. */
  constructor(processes: number, slots: number, random: () => number, logs: string) {
    this.#processes = processes;
    this.#slots = slots;
    this.#random = random;
    this.#logs = logs;
  }

  start(spec: (index: number) => WorkerSpec): void {
    process.once('exit', () => this.#children.forEach((child) => child.kill('SIGKILL'))); // the soak stopped or died: no worker outlives it
    for (let index = 0; index < this.#processes; index++) this.#spawn(index, spec(index));
    this.#sampler = setInterval(() => void this.#sample(), RSS_EVERY_MS);
  }

  /**
   * SIGKILLs one worker process chosen at random, never the first while there are others: that one
   * lives the whole run, through every other fault, so that a run long enough has a process whose
   * memory is judged (memoryProblems). Returns the pid.
   */
  killOne(): number {
    const spared = this.#children.length > 1 ? 1 : 0;
    const child = this.#children[spared + Math.floor(this.#random() * (this.#children.length - spared))];
    this.#killed.add(child.pid!);
    child.kill('SIGKILL');
    return child.pid!;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#sampler);
    await Promise.all(
      this.#children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /** The latest sample of each live worker process, as its pid and MiB: `RSS MiB: 5056 273, 5057 190`. */
  rssNow(): string {
    const latest = this.#children.map((child) => `${child.pid} ${this.#rss.find(({ pid }) => pid === child.pid)?.mib.at(-1) ?? '?'}`);
    return `RSS MiB: ${latest.join(', ')}`;
  }

  rssReport(): string[] {
    return this.#rss
      .filter(({ mib }) => mib.length > 0)
      .map(({ pid, mib }) => `worker ${pid} RSS MiB: first ${mib[0]}, last ${mib.at(-1)}, max ${Math.max(...mib)} (${mib.length} samples, every ${RSS_EVERY_MS / 1000} s)`);
  }

  /** The processes that lived past their warm-up long enough to be judged and whose memory kept growing (memoryGrowth). */
  memoryProblems(): string[] {
    return this.#rss.flatMap(({ pid, mib }) => {
      const growth = memoryGrowth(mib, { warmUpSamples: WARM_UP_MS / RSS_EVERY_MS, judgedAfterSamples: JUDGED_AFTER_MS / RSS_EVERY_MS });
      return growth === undefined ? [] : [`worker ${pid}: memory grew from ${growth.warmedUp} to ${growth.last} MiB after its warm-up`];
    });
  }

  #spawn(index: number, spec: WorkerSpec): void {
    const concurrency = Math.floor(this.#slots / this.#processes) + (index < this.#slots % this.#processes ? 1 : 0);
    const args = ['--import', SKEWED_CLOCK, '--import', DELAY_ENGINE, MAIN, 'work', '--model', spec.model, '--variant', spec.variant, '--storage', `s3://${BUCKET}`];
    args.push('--concurrency', String(concurrency), '--lock-duration', String(LOCK_DURATION_S), '--stalled-interval', String(STALLED_INTERVAL_S));
    const child = spawn(process.execPath, args, { env: { ...process.env, ...spec.env }, stdio: ['ignore', 'ignore', 'pipe'] });
    this.#children[index] = child;
    const samples: RssSamples = { pid: child.pid!, mib: [] };
    this.#rss.push(samples);
    let lastLine = '';
    child.stderr!.pipe(createWriteStream(path.join(this.#logs, `worker-${child.pid}.log`)));
    createInterface({ input: child.stderr! }).on('line', (line) => (lastLine = line));
    child.once('exit', (code, signal) => {
      if (this.#stopping) return;
      const how = `worker ${child.pid} exited with ${signal ?? code}`;
      this.exits.push(this.#killed.has(child.pid!) ? `${how} (killed by the soak)` : `${how} on its own; its last log line: ${lastLine}`);
      setTimeout(() => this.#spawn(index, spec), 500);
    });
  }

  async #sample(): Promise<void> {
    for (const child of this.#children) {
      const samples = this.#rss.find(({ pid }) => pid === child.pid);
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => undefined);
      const kib = status && /^VmRSS:\s+(\d+)/m.exec(status)?.[1];
      if (samples && kib) samples.mib.push(Math.round(Number(kib) / 1024));
    }
  }
}

/** A clock error of 1 s to MAX_CLOCK_SKEW_MS, ahead or behind, in whole milliseconds. */
function clockSkewMs(random: () => number): number {
  const magnitude = 1000 + Math.round(random() * (MAX_CLOCK_SKEW_MS - 1000));
  return random() < 0.5 ? -magnitude : magnitude;
}

async function syntheticModels(root: string): Promise<Record<Variant, string>> {
  const models = {} as Record<Variant, string>;
  for (const variant of VARIANTS) {
    const outDir = path.join(root, `model-${variant}`);
    await synthCheckpoint({ variant, size: 'tiny', outDir });
    models[variant] = outDir;
  }
  return models;
}

/** Small PDFs of seeded page counts, alternately for each variant, until they hold `pages` pages. */
async function writeDocuments(root: string, pages: number, random: () => number): Promise<Record<Variant, string>> {
  const dirs = {} as Record<Variant, string>;
  for (const variant of VARIANTS) dirs[variant] = await makeDir(root, `inputs-${variant}`);
  let written = 0;
  for (let index = 0; written < pages; index++) {
    const count = Math.min(PAGE_COUNTS[Math.floor(random() * PAGE_COUNTS.length)], pages - written);
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    for (let page = 1; page <= count; page++) pdf.addPage([200, 260]).drawText(`soak document ${index}, page ${page}`, { x: 10, y: 200, size: 8, font });
    await writeFile(path.join(dirs[VARIANTS[index % VARIANTS.length]], `document-${index}.pdf`), await pdf.save());
    written += count;
  }
  return dirs;
}

async function makeDir(root: string, name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  return dir;
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

/** Every worker log line that names `docId`, each after its log file's name. */
async function logLinesOf(logs: string, docId: string): Promise<string[]> {
  const lines = [`worker log lines of ${docId}:`];
  for (const file of (await readdir(logs)).sort()) {
    const text = await readFile(path.join(logs, file), 'utf8');
    lines.push(...text.split('\n').filter((line) => line.includes(docId)).map((line) => `  ${file}: ${line}`));
  }
  return lines;
}

/** Waits `ms`, or less once `done` holds (checked every second). */
async function waitFor(ms: number, done: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !done()) await sleep(Math.min(1000, until - Date.now()));
}

function elapsed(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

exitWith('soak', runCommandLine(defineCommand({ usage: USAGE, options: OPTIONS, run: main }), process.argv.slice(2), 'soak'));
