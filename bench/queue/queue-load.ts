// What the queue itself costs at archive scale: enqueue --jobs page jobs (the producer's own flows,
// job data and options; --pages-per-document pages under each document job) into a local Redis, then
// claim and complete them with a growing number of claimers whose engine step is REPLACED BY A FIXED
// DELAY (no OCR runs), and report the enqueue rate, the claim latency percentiles, Redis memory per
// job, and the largest number of claimers before Redis becomes the bottleneck:
//   npm run build && node dist/bench/queue/queue-load.js [--jobs 100000] [--claimers 1,4,16,64,128] [--delay-ms 50]
// A claimer is one job slot: a `scriptorium work` process holds --concurrency (2 × --batch) of them.
// Redis is $REDIS_URL, else a private redis-server started for the run.
import os from 'node:os';
import { performance } from 'node:perf_hooks';

import { FlowProducer, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';

import { defineCommand, type CommandLine } from '../../src/cli/command-line.js';
import { integer, integers } from '../../src/cli/options.js';
import { exitWith, runCommandLine } from '../../src/cli/usage.js';
import type { DocumentJobData, OcrJobOptions, PageJobData } from '../../src/jobs/job-types.js';
import { documentFlow } from '../../src/producer/enqueue.js';
import type { PlannedDocument } from '../../src/producer/plan-document.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { nearestRankPercentile } from '../../src/worker/stage-stats.js';

const USAGE = `Usage: node dist/bench/queue/queue-load.js [--jobs N] [--pages-per-document P] [--claimers C1,C2,...] [--delay-ms D] [--stage-seconds S]

Enqueues N page jobs (default 100000, P = 10 per document), claims and completes them with each number
of claimers in turn for S seconds (default 10) and then drains the rest with the largest; each job's
engine step is a fixed D ms delay (default 50).`;

/**
 * A stage whose rate per claimer falls below this share of the first stage's (its scaling efficiency)
 * has hit a bottleneck.
 */
const EFFICIENT = 0.8;
/** Redis runs commands on one thread: this share of a core busy means Redis is what limits the rate. */
const REDIS_SATURATED = 0.9;
const ENQUEUE_CHUNK_DOCUMENTS = 100;
const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'gundam', dpi: 144 };
/** The storage the made-up jobs name; nothing is read from it: the engine step is a fixed delay. */
const STORAGE_URL = 's3://archive';

interface StageResult {
  claimers: number;
  seconds: number;
  completed: number;
  claimLatencyMs: number[];
  redisCpu: number;
  clientBusy: number;
}

const OPTIONS = {
  jobs: integer({ min: 1 }).default(100_000),
  'pages-per-document': integer({ min: 1 }).default(10),
  claimers: integers({ min: 1 }).default([1, 4, 16, 64, 128]),
  'delay-ms': integer({ min: 1 }).default(50),
  'stage-seconds': integer({ min: 1 }).default(10),
};

async function main({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { jobs, 'pages-per-document': perDocument, claimers: claimerCounts, 'delay-ms': delayMs } = values;
  const stageMs = values['stage-seconds'] * 1000;

  const embedded: EmbeddedRedis | undefined = process.env.REDIS_URL ? undefined : await startEmbeddedRedis();
  const url = process.env.REDIS_URL ?? embedded!.url;
  const client = new Redis(redisOptions(url, 'client'));
  const write = (line: string) => process.stdout.write(`${line}\n`);
  try {
    write(`queue load on ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}; a shared machine: other work ran beside this)`);
    write(`THE ENGINE STEP IS REPLACED BY A FIXED ${delayMs} ms DELAY: no OCR runs; this measures the queue only`);
    await client.flushdb();

    const memoryBefore = await usedMemory(client);
    const enqueueStart = performance.now();
    const enqueued = await enqueue(url, jobs, perDocument);
    const enqueueSeconds = (performance.now() - enqueueStart) / 1000;
    const memoryAfter = await usedMemory(client);
    write(`enqueued ${enqueued} page jobs under ${Math.ceil(enqueued / perDocument)} document jobs in ${enqueueSeconds.toFixed(1)} s: ${Math.round(enqueued / enqueueSeconds)} page jobs/s`);
    write(`Redis memory: ${((memoryAfter - memoryBefore) / 2 ** 20).toFixed(1)} MiB for them, ${Math.round((memoryAfter - memoryBefore) / enqueued)} bytes per page job (its document job's share included)`);

    const pool = new ClaimerPool(url, delayMs);
    const stages: StageResult[] = [];
    write('claimers  seconds  completed  jobs/s  scaling  claim p50  p90  p99 (ms)  Redis CPU  per job  client busy');
    for (const claimers of claimerCounts) {
      const stage = await pool.run(claimers, client, { untilMs: stageMs });
      stages.push(stage);
      write(stageLine(stage, stages[0]));
    }
    const drain = await pool.run(Math.max(...claimerCounts), client, { untilDrained: true });
    write(`drained the remaining ${drain.completed} jobs with ${drain.claimers} claimers in ${drain.seconds.toFixed(1)} s; ${pool.completed} of ${enqueued} completed`);
    write(`Redis memory after: ${((await usedMemory(client)) / 2 ** 20).toFixed(1)} MiB (completed page jobs are kept up to 10,000 for status)`);
    await pool.close();

    // Redis runs commands on one core: the CPU time it spends per job bounds the jobs per second it can serve.
    const busiest = stages.reduce((a, b) => (b.completed > a.completed ? b : a));
    write(`Redis spent ${redisMsPerJob(busiest).toFixed(2)} ms of CPU per claimed and completed job: one Redis core serves at most about ${Math.round(1000 / redisMsPerJob(busiest))} jobs/s`);
    const first = stages.findIndex((stage) => efficiency(stage, stages[0]) < EFFICIENT);
    const knee = first === -1 ? stages.at(-1)! : stages[Math.max(0, first - 1)];
    write(`largest claimer count still scaling at >= ${EFFICIENT * 100}% per claimer: ${knee.claimers} (${Math.round(rate(knee))} jobs/s)${first === -1 ? ', the largest tried' : ''}`);
    const redisBound = stages.find((stage) => stage.redisCpu >= REDIS_SATURATED);
    const peak = Math.max(...stages.map((stage) => stage.redisCpu));
    if (redisBound !== undefined) {
      write(`Redis became the bottleneck at ${redisBound.claimers} claimers (its core ${Math.round(redisBound.redisCpu * 100)}% busy)`);
    } else if (first !== -1) {
      const stage = stages[first];
      write(
        `Redis never became the bottleneck (its CPU peaked at ${Math.round(peak * 100)}% of a core); from ${stage.claimers} claimers the rate per claimer fell to ` +
          `${Math.round(efficiency(stage, stages[0]) * 100)}% because this benchmark's client process (${Math.round(stage.clientBusy * 100)}% busy) and the machine ran out first`,
      );
    }
  } finally {
    client.disconnect();
    await embedded?.close();
  }
  return 0;
}

async function enqueue(url: string, jobs: number, perDocument: number): Promise<number> {
  const flows = new FlowProducer({ connection: redisOptions(url, 'client'), prefix: DOCUMENTS.prefix });
  let pages = 0;
  try {
    for (let document = 0; pages < jobs; ) {
      const batch = [];
      for (let i = 0; i < ENQUEUE_CHUNK_DOCUMENTS && pages < jobs; i++, document++) {
        const count = Math.min(perDocument, jobs - pages);
        batch.push(documentFlow(syntheticPlan(document, count)));
        pages += count;
      }
      await flows.addBulk(batch);
    }
  } finally {
    await flows.close();
  }
  return pages;
}

/** A planned document as planDocument makes one, with made-up ids and keys. */
function syntheticPlan(index: number, pageCount: number): PlannedDocument {
  const docId = index.toString(16).padStart(64, '0');
  const keys = { source: `staging/${docId}/source.pdf`, results: `results/${docId}/` };
  const common = { docId, sourceUri: `s3://archive/box-${Math.floor(index / 1000)}/scan-${index}.pdf`, type: 'pdf' as const, storage: STORAGE_URL, keys, options: OCR, enqueuedAt: Date.now() };
  const documentJob: DocumentJobData = { ...common, pageCount };
  const pageJobs: PageJobData[] = Array.from({ length: pageCount }, (_, i) => ({ ...common, firstPage: i + 1, lastPage: i + 1 }));
  return { status: 'planned', docId, keys, documentJob, pageJobs, alreadyDone: false, source: Buffer.alloc(0), size: 0 };
}

/** Claim loops on the V3 page queue, each with its own BullMQ worker (and Redis connections). */
class ClaimerPool {
  readonly #url: string;
  readonly #delayMs: number;
  readonly #workers: Worker[] = [];
  completed = 0;

  constructor(url: string, delayMs: number) {
    this.#url = url;
    this.#delayMs = delayMs;
  }

  async run(claimers: number, redis: Redis, until: { untilMs?: number; untilDrained?: boolean }): Promise<StageResult> {
    while (this.#workers.length < claimers) {
      this.#workers.push(new Worker(pageQueue('v3').name, null, { connection: redisOptions(this.#url, 'worker'), prefix: pageQueue('v3').prefix, autorun: false }));
    }
    const latencies: number[] = [];
    const completedBefore = this.completed;
    const cpuBefore = await redisCpuSeconds(redis);
    const busyBefore = performance.eventLoopUtilization();
    const start = performance.now();
    const stopAt = until.untilMs === undefined ? Infinity : start + until.untilMs;
    await Promise.all(
      this.#workers.slice(0, claimers).map(async (worker, index) => {
        for (let n = 0; performance.now() < stopAt; n++) {
          const token = `bench-${index}-${n}`;
          const claimStart = performance.now();
          const job: Job | undefined = await worker.getNextJob(token, { block: false });
          if (job === undefined) {
            if (until.untilDrained) return;
            await sleep(5);
            continue;
          }
          latencies.push(performance.now() - claimStart);
          await sleep(this.#delayMs);
          await job.moveToCompleted({ status: 'done' }, token, false);
          this.completed++;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    return {
      claimers,
      seconds,
      completed: this.completed - completedBefore,
      claimLatencyMs: latencies,
      redisCpu: ((await redisCpuSeconds(redis)) - cpuBefore) / seconds,
      clientBusy: performance.eventLoopUtilization(busyBefore).utilization,
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.close()));
  }
}

function rate(stage: StageResult): number {
  return stage.completed / stage.seconds;
}

/** Redis CPU milliseconds per completed job in the stage. */
function redisMsPerJob(stage: StageResult): number {
  return (stage.redisCpu * stage.seconds * 1000) / Math.max(1, stage.completed);
}

/** Rate per claimer, as a share of the baseline stage's. */
function efficiency(stage: StageResult, baseline: StageResult): number {
  return rate(stage) / stage.claimers / (rate(baseline) / baseline.claimers);
}

function stageLine(stage: StageResult, baseline: StageResult): string {
  const sorted = [...stage.claimLatencyMs].sort((a, b) => a - b);
  const p = (q: number) => nearestRankPercentile(sorted, q).toFixed(1);
  return [
    String(stage.claimers).padStart(8),
    stage.seconds.toFixed(1).padStart(7),
    String(stage.completed).padStart(9),
    rate(stage).toFixed(0).padStart(6),
    `${Math.round(efficiency(stage, baseline) * 100)}%`.padStart(7),
    p(50).padStart(9),
    p(90).padStart(4),
    p(99).padStart(4),
    `${Math.round(stage.redisCpu * 100)}%`.padStart(17),
    `${redisMsPerJob(stage).toFixed(2)} ms`.padStart(7),
    `${Math.round(stage.clientBusy * 100)}%`.padStart(12),
  ].join('  ');
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1]);
}

/** Redis's own CPU time (user + system), in seconds. */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

exitWith('queue-load', runCommandLine(defineCommand({ usage: USAGE, options: OPTIONS, run: main }), process.argv.slice(2), 'queue-load'));
