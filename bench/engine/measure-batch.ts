// Batched decode in this process: for each batch size B, B sequences get the same-length prefix of
// seeded random ids in one batched prefill, then advance together, one greedy token each per forward
// call. Only the forward calls of the decode steps are timed; the engine counts the routed experts
// they run, which gives the bytes they read.
import { NativeModel } from '../../src/engine/native-model.js';
import { randomIds, warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type BatchAnswer, type BatchJob } from './measure-jobs.js';
import { decodeRunBytes, KV_ELEMENT_BYTES, moeLayerCount } from './work-counts.js';

export async function measureBatch(job: BatchJob, progress: (line: string) => void): Promise<BatchAnswer> {
  const model = await NativeModel.load(job.modelDir, { threads: job.threads, device: job.device, precision: job.precision, quantize: job.quantize });
  const d = model.config.decoder;
  const moeLayers = moeLayerCount(d);
  progress('warming up the decoder');
  await warmUpDecoder(model);
  const rows: BatchAnswer['rows'] = [];
  for (const batch of job.batches) {
    const ms: number[] = [];
    let passes = 0;
    for (let run = 1; run <= job.runs; run++) {
      progress(`batch ${batch}, run ${run}/${job.runs}: prefill ${batch}×${job.prefixTokens} tokens, then ${job.steps} steps`);
      const sequences = Array.from({ length: batch }, () => model.createSequence());
      try {
        let outputs = await model.forward(
          sequences.map((sequence, i) => ({ sequence, ids: randomIds(job.prefixTokens, i + 1), logits: false })),
        );
        let elapsed = 0;
        const passesBefore = model.routedExpertPasses;
        for (let step = 0; step < job.steps; step++) {
          const next = outputs.map((output) => output.best);
          const started = performance.now();
          outputs = await model.forward(sequences.map((sequence, i) => ({ sequence, ids: Int32Array.of(next[i]), logits: false })));
          elapsed += performance.now() - started;
        }
        ms.push(elapsed);
        passes += model.routedExpertPasses - passesBefore;
      } finally {
        for (const sequence of sequences) sequence.release();
      }
    }
    const distinctExperts = passes / (job.runs * job.steps * moeLayers);
    const bytes = decodeRunBytes(d, batch, job.prefixTokens, job.steps, { quantize: job.quantize, distinctExperts, kvElementBytes: KV_ELEMENT_BYTES[model.kvCache] });
    rows.push({ batch, ms, distinctExperts, bytes, peakRssBytes: peakRssBytes() });
  }
  return { variant: model.config.variant, quantize: job.quantize, prefixTokens: job.prefixTokens, steps: job.steps, rows, peakRssBytes: peakRssBytes() };
}
