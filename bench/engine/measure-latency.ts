// Per-step decode latency of one sequence as its generated length grows, after the prefix of a
// multi-page single-pass prompt (V3's parse-multi prompt with `pages` base-mode pages). The prefix is
// fed as token ids alone: at batch 1 a step reads the same weights whatever the content (top-k
// experts plus the shared ones), so the image rows need no encoder outputs.
import { imageTokenCount } from '../../src/engine/image-tokens.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { buildPromptIds, promptText } from '../../src/engine/prompts.js';
import { Tokenizer } from '../../src/engine/tokenizer.js';
import { warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type LatencyAnswer, type LatencyJob } from './measure-jobs.js';
import { decodeWeightBytes, KV_ELEMENT_BYTES, kvReadBytes } from './work-counts.js';

export async function measureLatency(job: LatencyJob, progress: (line: string) => void): Promise<LatencyAnswer> {
  const [model, tokenizer] = await Promise.all([NativeModel.load(job.modelDir, { threads: job.threads, device: job.device, precision: job.precision }), Tokenizer.fromDir(job.modelDir)]);
  const dims = model.config.decoder;
  const perPage = imageTokenCount('v3', 'base', [1, 1]);
  const prefix = buildPromptIds(tokenizer, model.config.bosId, promptText('v3', 'parse-multi'), Array(job.pages).fill(perPage)).ids;
  if (prefix.length + job.steps > dims.maxPositions) {
    throw new Error(
      `${model.config.variant}: a ${prefix.length}-token prefix and ${job.steps} generated tokens exceed its ${dims.maxPositions} positions; lower --max-len`,
    );
  }
  const answer: LatencyAnswer = {
    variant: model.config.variant,
    prefixTokens: prefix.length,
    prefillMs: [],
    stepMs: [],
    stepBytes: Array.from({ length: job.steps }, (_, step) => decodeWeightBytes(dims, 1) + kvReadBytes(dims, prefix.length, prefix.length + step, KV_ELEMENT_BYTES[model.kvCache])),
    peakRssBytes: 0,
  };
  progress('warming up the decoder');
  await warmUpDecoder(model);
  for (let run = 1; run <= job.runs; run++) {
    const sequence = model.createSequence();
    try {
      progress(`run ${run}/${job.runs}: prefill of ${prefix.length} tokens`);
      let started = performance.now();
      let [output] = await model.forward([{ sequence, ids: Int32Array.from(prefix), logits: false }]);
      answer.prefillMs.push(performance.now() - started);
      const stepMs: number[] = [];
      for (let step = 0; step < job.steps; step++) {
        if (step > 0 && step % 512 === 0) progress(`run ${run}/${job.runs}: ${step} / ${job.steps} steps`);
        const next = output.best;
        started = performance.now();
        [output] = await model.forward([{ sequence, ids: Int32Array.of(next), logits: false }]);
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
