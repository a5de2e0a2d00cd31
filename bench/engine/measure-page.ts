// One page case in this process: the engine prepares the prompt once (which also brings the vision
// weights into memory) and the decoder is warmed up, then every run encodes the same views again,
// timing each stage, and generates a fixed number of tokens from the prepared prompt.
import { generate } from '../../src/engine/generate.js';
import { OcrEngine, type PreparedPrompt } from '../../src/engine/ocr-engine.js';
import { warmUpDecoder } from './decoder-warm-up.js';
import { peakRssBytes, type EncodeSample, type PageAnswer, type PageJob } from './measure-jobs.js';
import { pageCase, syntheticPage } from './page-cases.js';
import { addFlops, decodeRunBytes, encodeFlops, KV_ELEMENT_BYTES, NO_FLOPS, prefillFlops } from './work-counts.js';

interface EncodeCall {
  pixels: Float32Array;
  count: number;
  side: number;
}

/** The encodeImages calls OcrEngine.prepare makes: every page's global view in one, then each page's tiles. */
function encodeCalls(prepared: PreparedPrompt): EncodeCall[] {
  const pages = prepared.pages.map((p) => p.preprocessed);
  const globals = new Float32Array(pages.reduce((n, p) => n + p.global.length, 0));
  pages.forEach((p, i) => globals.set(p.global, i * p.global.length));
  const calls: EncodeCall[] = [{ pixels: globals, count: pages.length, side: pages[0].globalSide }];
  for (const page of pages) {
    if (page.tiles) calls.push({ pixels: page.tiles, count: page.grid[0] * page.grid[1], side: page.tileSide });
  }
  return calls;
}

export async function measurePage(job: PageJob, progress: (line: string) => void): Promise<PageAnswer> {
  const spec = pageCase(job.caseId);
  const engine = await OcrEngine.load(job.modelDir, { threads: job.threads, device: job.device, precision: job.precision });
  if (engine.variant !== spec.variant) throw new Error(`${job.modelDir} holds a ${engine.variant} checkpoint, case ${spec.id} needs ${spec.variant}`);
  const model = engine.model;
  const images = Array.from({ length: spec.pages }, (_, i) => syntheticPage(spec.pageSize, i));
  progress('preparing the prompt (one untimed encode)');
  const prepared = await engine.prepare(images, spec.task, spec.mode);
  if (job.decode) {
    progress('warming up the decoder');
    await warmUpDecoder(model);
  }
  const calls = encodeCalls(prepared);
  const tiles = prepared.pages[0].preprocessed.grid;
  if (tiles[0] * tiles[1] !== Math.max(1, spec.tiles)) {
    throw new Error(`case ${spec.id}: the page became ${tiles[0]}×${tiles[1]} tiles, expected ${spec.tiles}`);
  }

  const stages = calls.map((call) => encodeFlops(model.vision!, call.side, call.count));
  const promptTokens = prepared.promptIds.length;
  const answer: PageAnswer = {
    caseId: spec.id,
    views: calls.map(({ side, count }) => ({ side, count })),
    promptTokens,
    imageTokens: prepared.imagePositions.length,
    decodeTokens: job.decodeTokens,
    work: {
      sam: addFlops(...stages.map((s) => s.sam)),
      encoder: addFlops(...stages.map((s) => s.encoder)),
      projector: addFlops(...stages.map((s) => s.projector)),
      calls: stages.map((s) => ({ sam: s.sam, encoder: s.encoder })),
      prefill: job.decode ? prefillFlops(model.config.decoder, promptTokens) : NO_FLOPS,
      decodeBytes: job.decode ? decodeRunBytes(model.config.decoder, 1, promptTokens, job.decodeTokens - 1, { kvElementBytes: KV_ELEMENT_BYTES[model.kvCache] }) : 0,
    },
    encode: [],
    prefillMs: [],
    decodeMs: [],
    peakRssBytes: 0,
    weightBytes: model.weightBytes,
  };

  for (let run = 1; run <= job.runs; run++) {
    if (job.encoders) {
      progress(`run ${run}/${job.runs}: encoding ${calls.map((c) => `${c.count}×${c.side}px`).join(' + ')}`);
      const sample: EncodeSample = { sam: 0, encoder: 0, projector: 0, calls: [], total: 0 };
      for (const call of calls) {
        const started = performance.now();
        const { stageMs } = await model.encodeImages(call.pixels, call.count, call.side);
        sample.total += performance.now() - started;
        sample.sam += stageMs.sam;
        sample.encoder += stageMs.encoder;
        sample.projector += stageMs.projector;
        sample.calls.push({ sam: stageMs.sam, encoder: stageMs.encoder, projector: stageMs.projector });
      }
      answer.encode.push(sample);
    }
    if (job.decode) {
      progress(`run ${run}/${job.runs}: prefill of ${promptTokens} tokens, then ${job.decodeTokens} generated`);
      const [result] = await generate(model, [
        {
          promptIds: prepared.promptIds,
          embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
          maxNewTokens: job.decodeTokens,
          stopAtEos: false,
        },
      ]);
      if (result.ids.length !== job.decodeTokens) throw new Error(`generated ${result.ids.length} tokens, expected ${job.decodeTokens}`);
      answer.prefillMs.push(result.timings.prefillMs);
      answer.decodeMs.push(result.timings.decodeMs);
    }
  }
  answer.peakRssBytes = peakRssBytes();
  return answer;
}
