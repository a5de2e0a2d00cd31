// Runs a measuring job in a child process of its own and returns its answer. The child's stdout and
// stderr (progress) go to this process's.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type {
  AccuracyAnswer,
  AccuracyJob,
  BatchAnswer,
  BatchJob,
  KvCacheAnswer,
  KvCacheJob,
  LatencyAnswer,
  LatencyJob,
  MeasureJob,
  PageAnswer,
  PageJob,
  PeerAnswer,
  PeerJob,
  ThroughputAnswer,
  ThroughputJob,
} from './measure-jobs.js';

const CHILD = fileURLToPath(new URL('./measure-process.js', import.meta.url));

export function runMeasureProcess(job: PageJob): Promise<PageAnswer>;
export function runMeasureProcess(job: BatchJob): Promise<BatchAnswer>;
export function runMeasureProcess(job: LatencyJob): Promise<LatencyAnswer>;
export function runMeasureProcess(job: KvCacheJob): Promise<KvCacheAnswer>;
export function runMeasureProcess(job: AccuracyJob): Promise<AccuracyAnswer>;
export function runMeasureProcess(job: PeerJob): Promise<PeerAnswer>;
export function runMeasureProcess(job: ThroughputJob): Promise<ThroughputAnswer>;
export function runMeasureProcess(job: MeasureJob): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let reply: { answer?: unknown; error?: string } | undefined;
    child.on('message', (message) => {
      reply = message as typeof reply;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (reply?.answer !== undefined) resolve(reply.answer);
      else reject(new Error(reply?.error ?? `the measuring process exited with ${signal ?? `status ${code}`}`));
    });
  });
}
