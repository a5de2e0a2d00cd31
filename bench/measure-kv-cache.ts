// Decode after a long prefix with one KV-cache storage (bench part `kvcache`): one sequence, a prefix
// of seeded ids, then timed greedy steps. A step reads the weights it touches plus every cached key
// and value, so the half cache's share of the bytes (and of the time) is half the F32 cache's.
import { NativeModel } from '../src/engine/native-model.js';
import { randomIds, warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type KvCacheAnswer, type KvCacheJob } from './measure-jobs.js';
import { decodeWeightBytes, KV_ELEMENT_BYTES, kvReadBytes } from './work-counts.js';

export async function measureKvCache(job: KvCacheJob, progress: (line: string) => void): Promise<KvCacheAnswer> {
  const model = await NativeModel.load(job.modelDir, { threads: job.threads, kvCache: job.kvCache });
  const dims = model.config.decoder;
  let cacheBytes = 0;
  for (let step = 0; step < job.steps; step++) {
    cacheBytes += kvReadBytes(dims, job.prefixTokens, job.prefixTokens + step, KV_ELEMENT_BYTES[job.kvCache]) / job.steps;
  }
  const answer: KvCacheAnswer = {
    variant: model.config.variant,
    kvCache: job.kvCache,
    prefixTokens: job.prefixTokens,
    stepMs: [],
    weightBytes: decodeWeightBytes(dims, 1),
    cacheBytes,
    peakRssBytes: 0,
  };
  progress('warming up the decoder');
  await warmUpDecoder(model);
  for (let run = 1; run <= job.runs; run++) {
    const sequence = model.createSequence();
    try {
      progress(`run ${run}/${job.runs}: ${job.kvCache} cache, prefill of ${job.prefixTokens} tokens`);
      let [output] = await model.forward([{ sequence, ids: randomIds(job.prefixTokens, 4242), logits: false }]);
      const stepMs: number[] = [];
      for (let step = 0; step < job.steps; step++) {
        const started = performance.now();
        [output] = await model.forward([{ sequence, ids: Int32Array.of(output.best), logits: false }]);
        stepMs.push(performance.now() - started);
      }
      answer.stepMs.push(stepMs);
    } finally {
      sequence.release();
    }
  }
  answer.peakRssBytes = peakRssBytes();
  return answer;
}
