// Decode after a long prefix per KV-cache storage (bench part `kvcache`): the checkpoint loaded once
// per storage in one process, one sequence each after the same prefix of seeded ids, then greedy
// steps taken in turns (the order alternating every step) so that both see the same machine load.
// A step reads the weights it touches plus every cached key and value: the half cache halves the
// second share.
import type { NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { randomIds, warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type KvCacheAnswer, type KvCacheJob } from './measure-jobs.js';
import { decodeWeightBytes, KV_ELEMENT_BYTES, kvReadBytes } from './work-counts.js';

export async function measureKvCache(job: KvCacheJob, progress: (line: string) => void): Promise<KvCacheAnswer> {
  const models: NativeModel[] = [];
  for (const kvCache of job.kvCaches) models.push(await NativeModel.load(job.modelDir, { threads: job.threads, precision: job.precision, kvCache }));
  const dims = models[0].config.decoder;
  const averageCacheBytes = (elementBytes: number) => {
    let bytes = 0;
    for (let step = 0; step < job.steps; step++) bytes += kvReadBytes(dims, job.prefixTokens, job.prefixTokens + step, elementBytes);
    return bytes / job.steps;
  };
  const answer: KvCacheAnswer = {
    variant: models[0].config.variant,
    prefixTokens: job.prefixTokens,
    weightBytes: decodeWeightBytes(dims, 1),
    rows: job.kvCaches.map((kvCache) => ({ kvCache, stepMs: [], cacheBytes: averageCacheBytes(KV_ELEMENT_BYTES[kvCache]) })),
    peakRssBytes: 0,
  };
  progress('warming up the decoder');
  await warmUpDecoder(models[0]);
  for (let run = 1; run <= job.runs; run++) {
    const sequences: NativeSequence[] = [];
    try {
      const next: number[] = [];
      for (const [i, model] of models.entries()) {
        progress(`run ${run}/${job.runs}: ${job.kvCaches[i]} cache, prefill of ${job.prefixTokens} tokens`);
        sequences.push(model.createSequence());
        const [output] = await model.forward([{ sequence: sequences[i], ids: randomIds(job.prefixTokens, 4242), logits: false }]);
        next.push(output.best);
      }
      const stepMs: number[][] = models.map(() => []);
      for (let step = 0; step < job.steps; step++) {
        const order = models.map((_, i) => i);
        if (step % 2 === 1) order.reverse();
        for (const i of order) {
          const started = performance.now();
          const [output] = await models[i].forward([{ sequence: sequences[i], ids: Int32Array.of(next[i]), logits: false }]);
          stepMs[i].push(performance.now() - started);
          next[i] = output.best;
        }
      }
      stepMs.forEach((ms, i) => answer.rows[i].stepMs.push(ms));
    } finally {
      for (const sequence of sequences) sequence.release();
    }
  }
  answer.peakRssBytes = peakRssBytes();
  return answer;
}
