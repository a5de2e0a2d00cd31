// What a node's worker processes hold in memory, with the packed weights in each process's own
// memory and with them shared through one file (SCRIPTORIUM_PACKED_WEIGHTS_DIR, docs/engine.md):
// N processes load the same checkpoint together and read a page each; while all of them are up,
// each one's resident set (RSS) and proportional set size (PSS: a shared page counts 1/N in each of
// the N processes mapping it) are read from /proc/<pid>/smaps_rollup. The sum of the PSS is what
// the processes cost the node; the file's pages in the page cache are counted there once.
import { fork } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { PACKED_WEIGHTS_DIR_VARIABLE } from '../../src/engine/native-model.js';
import type { Precision } from '../../src/engine/precision.js';
import type { SharedWeightsChildJob, SharedWeightsChildReady } from './shared-weights-process.js';

const CHILD = fileURLToPath(new URL('./shared-weights-process.js', import.meta.url));

export interface SharedWeightsJob {
  modelDir: string;
  threads: number;
  precision: Precision;
  /** Process counts to measure with shared weights; private weights are measured at 1 and 2. */
  processes: readonly number[];
  tokens: number;
}

/** Where the processes' packed weights are: their own memory, or the node's file (written by the first load, mapped by later ones). */
export type WeightsHeld = 'private' | 'writes the file' | 'maps the file';

export interface SharedWeightsRow {
  weights: WeightsHeld;
  processes: number;
  /** Per process, in start order. */
  loadMs: number[];
  rssBytes: number[];
  pssBytes: number[];
  anonymousBytes: number[];
}

/** Private weights in 1 and 2 processes; then one process that writes the shared file; then the file mapped by each count of processes. */
export async function measureSharedWeights(job: SharedWeightsJob, progress: (line: string) => void): Promise<SharedWeightsRow[]> {
  const folder = await mkdtemp(path.join(tmpdir(), 'scriptorium-bench-packed-'));
  try {
    const rows: SharedWeightsRow[] = [];
    for (const processes of [1, 2]) {
      progress(`${processes} process(es), packed weights in each one's memory`);
      rows.push(await measureProcesses(job, processes, null));
    }
    progress('1 process packs the weights into the shared file');
    rows.push(await measureProcesses(job, 1, folder));
    for (const processes of job.processes) {
      progress(`${processes} process(es) mapping the shared file`);
      rows.push(await measureProcesses(job, processes, folder));
    }
    return rows;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function measureProcesses(job: SharedWeightsJob, processes: number, packedWeightsDir: string | null): Promise<SharedWeightsRow> {
  const childJob: SharedWeightsChildJob = { modelDir: job.modelDir, threads: job.threads, precision: job.precision, tokens: job.tokens };
  const env = { ...process.env };
  delete env[PACKED_WEIGHTS_DIR_VARIABLE];
  if (packedWeightsDir !== null) env[PACKED_WEIGHTS_DIR_VARIABLE] = packedWeightsDir;
  const children = Array.from({ length: processes }, () =>
    fork(CHILD, [JSON.stringify(childJob)], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  try {
    const ready = await Promise.all(children.map(readyMessage));
    const memory = await Promise.all(children.map((child) => smapsRollup(child.pid!)));
    const weights: WeightsHeld = packedWeightsDir === null ? 'private' : ready.some((r) => r.wroteFile) ? 'writes the file' : 'maps the file';
    return {
      weights,
      processes,
      loadMs: ready.map((r) => r.loadMs),
      rssBytes: memory.map((m) => m.Rss),
      pssBytes: memory.map((m) => m.Pss),
      anonymousBytes: memory.map((m) => m.Anonymous),
    };
  } finally {
    await Promise.all(children.map(exited));
  }
}

function readyMessage(child: ReturnType<typeof fork>): Promise<SharedWeightsChildReady> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as SharedWeightsChildReady));
    child.once('exit', (code) => reject(new Error(`a measured process exited with status ${code} before it was ready`)));
  });
}

function exited(child: ReturnType<typeof fork>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    if (child.connected) child.send('exit');
    else child.kill();
  });
}

/** The kB fields of /proc/<pid>/smaps_rollup, in bytes. */
async function smapsRollup(pid: number): Promise<Record<'Rss' | 'Pss' | 'Anonymous', number>> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    if (match === null) throw new Error(`/proc/${pid}/smaps_rollup has no ${name}`);
    return Number(match[1]) * 1024;
  };
  return { Rss: field('Rss'), Pss: field('Pss'), Anonymous: field('Anonymous') };
}

const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/**
 * One line per configuration: each process's load time, RSS, PSS and anonymous memory (its own, not
 * shared), the node's total PSS, and what each process added to it over the previous configuration
 * of the same kind.
 */
export function sharedWeightsText(rows: readonly SharedWeightsRow[]): string {
  const lines = ['packed weights    procs  load s (each)    RSS GiB (each)           PSS GiB (each)           anonymous GiB (each)     node PSS GiB  added per process GiB'];
  rows.forEach((row, i) => {
    const previous = rows.slice(0, i).reverse().find((r) => r.weights === row.weights);
    const added = previous === undefined ? '' : gib((sum(row.pssBytes) - sum(previous.pssBytes)) / (row.processes - previous.processes));
    lines.push(
      [
        row.weights.padEnd(16),
        String(row.processes).padStart(6),
        ' ',
        row.loadMs.map((ms) => (ms / 1000).toFixed(0)).join(' ').padEnd(16),
        row.rssBytes.map(gib).join(' ').padEnd(24),
        row.pssBytes.map(gib).join(' ').padEnd(24),
        row.anonymousBytes.map(gib).join(' ').padEnd(24),
        gib(sum(row.pssBytes)).padStart(12),
        added.padStart(22),
      ].join(' '),
    );
  });
  return lines.join('\n');
}
