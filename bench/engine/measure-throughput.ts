// Pages per hour of one worker's engine at real page lengths, in this process: the job's pages of
// one page case, read the way the page worker reads them. At most 2 × batch pages are in hand at
// once (the worker's claims); each is preprocessed and encoded as soon as it is taken and joins the
// continuous batch once encoded; random weights give random text, so every page generates exactly
// `tokens` tokens (no EOS stop). Every forward call and every encode is recorded with its time, for
// the summary to find the full-batch window, the decode step time and what joining pages cost.
import { pagesInHand } from '../../src/engine/batch-size.js';
import { ContinuousBatch } from '../../src/engine/generate.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import { generationDefaults } from '../../src/engine/prompts.js';
import { warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type ThroughputAnswer, type ThroughputJob, type ThroughputStep } from './measure-jobs.js';
import { pageCase, syntheticPage } from './page-cases.js';

export async function measureThroughput(job: ThroughputJob, progress: (line: string) => void): Promise<ThroughputAnswer> {
  const spec = pageCase(job.caseId);
  if (spec.pages !== 1) throw new Error(`the throughput part reads one page per prompt; ${spec.id} has ${spec.pages}`);
  const engine = await OcrEngine.load(job.modelDir, { threads: job.threads, device: job.device, precision: job.precision, quantize: job.quantize });
  const { model } = engine;
  progress('warming up the decoder and the vision encoder');
  await warmUpDecoder(model);
  const warmUp = await engine.prepare([syntheticPage(spec.pageSize, 0)], spec.task, spec.mode);
  const { noRepeatNgram } = generationDefaults(engine.variant, spec.task);

  const steps: ThroughputStep[] = [];
  const encodes: [number, number][] = [];
  const started = performance.now();
  let passes = model.routedExpertPasses;
  const batch = new ContinuousBatch(model, job.batch, {
    onStep: ({ startedMs, ...step }) => {
      const now = model.routedExpertPasses;
      steps.push({ at: startedMs - started, ...step, expertPasses: now - passes });
      passes = now;
    },
  });
  let next = 0;
  let done = 0;
  const readPages = async (): Promise<void> => {
    while (next < job.pages) {
      const index = next++;
      const encodeStarted = performance.now() - started;
      const prepared = await engine.prepare([syntheticPage(spec.pageSize, index + 1)], spec.task, spec.mode);
      encodes.push([encodeStarted, performance.now() - started]);
      const result = await batch.generate({
        promptIds: prepared.promptIds,
        embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
        maxNewTokens: job.tokens,
        stopAtEos: false,
        noRepeatNgram,
      });
      if (result.ids.length !== job.tokens) throw new Error(`page ${index + 1} generated ${result.ids.length} tokens, not ${job.tokens}`);
      done++;
      if (done % job.batch === 0 || done === job.pages) progress(`${done}/${job.pages} pages`);
    }
  };
  progress(`${job.pages} pages of ${job.tokens} tokens, batch ${job.batch}, ${pagesInHand(job.batch)} in hand`);
  await Promise.all(Array.from({ length: Math.min(job.pages, pagesInHand(job.batch)) }, readPages));
  return {
    caseId: spec.id,
    variant: engine.variant,
    quantize: job.quantize,
    precision: job.precision,
    batch: job.batch,
    pages: job.pages,
    tokens: job.tokens,
    promptTokens: warmUp.promptIds.length,
    decoder: model.config.decoder,
    kvCache: model.kvCache,
    wallMs: performance.now() - started,
    steps,
    encodes,
    peakRssBytes: peakRssBytes(),
  };
}
