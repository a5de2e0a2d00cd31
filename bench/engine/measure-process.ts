// A measuring process: runs the one job given as its JSON argument and sends the answer (or the
// error) to the parent over IPC. Started by runMeasureProcess (measure-client.ts).
import { measureAccuracy } from './measure-accuracy.js';
import { measureBatch } from './measure-batch.js';
import { measureKvCache } from './measure-kv-cache.js';
import { measureLatency } from './measure-latency.js';
import { measurePage } from './measure-page.js';
import { measurePeer } from './measure-peer.js';
import { measureThroughput } from './measure-throughput.js';
import type { MeasureAnswer, MeasureJob } from './measure-jobs.js';

function label(job: MeasureJob): string {
  if (job.part === 'page') return job.caseId;
  if (job.part === 'accuracy') return `accuracy ${job.caseId}`;
  if (job.part === 'peer') return `peer ${job.pageCase.id}`;
  if (job.part === 'throughput') return `throughput ${job.caseId} batch ${job.batch} ${job.quantize}`;
  return `${job.part} ${job.modelDir}`;
}

async function run(job: MeasureJob): Promise<MeasureAnswer> {
  const started = performance.now();
  const progress = (line: string) =>
    process.stderr.write(`bench [${label(job)}] ${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s  ${line}\n`);
  if (job.part === 'page') return measurePage(job, progress);
  if (job.part === 'batch') return measureBatch(job, progress);
  if (job.part === 'kvcache') return measureKvCache(job, progress);
  if (job.part === 'accuracy') return measureAccuracy(job, progress);
  if (job.part === 'peer') return measurePeer(job, progress);
  if (job.part === 'throughput') return measureThroughput(job, progress);
  return measureLatency(job, progress);
}

const reply = (message: { answer: MeasureAnswer } | { error: string }) => process.send!(message, () => process.disconnect());

run(JSON.parse(process.argv[2]) as MeasureJob).then(
  (answer) => reply({ answer }),
  (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
);
