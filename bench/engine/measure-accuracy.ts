// Fast precision against exact on one page case in this process: both models map the same
// checkpoint, prepare the same page, and generate the same number of greedy tokens from it.
import { generate } from '../../src/engine/generate.js';
import { OcrEngine, type PreparedPrompt } from '../../src/engine/ocr-engine.js';
import type { Precision } from '../../src/engine/precision.js';
import type { AccuracyAnswer, AccuracyJob } from './measure-jobs.js';
import { pageCase, syntheticPage } from './page-cases.js';
import { agreeingPrefix, embedAgreement, maxRelativeError } from './precision-accuracy.js';

interface Run {
  prepared: PreparedPrompt;
  prefillLogits: Float32Array;
  ids: number[];
}

export async function measureAccuracy(job: AccuracyJob, progress: (line: string) => void): Promise<AccuracyAnswer> {
  const spec = pageCase(job.caseId);
  const images = Array.from({ length: spec.pages }, (_, i) => syntheticPage(spec.pageSize, i));
  const run = async (precision: Precision): Promise<Run> => {
    const engine = await OcrEngine.load(job.modelDir, { threads: job.threads, precision });
    progress(`${precision}: encoding the page, then ${job.steps} greedy tokens`);
    const prepared = await engine.prepare(images, spec.task, spec.mode);
    const [result] = await generate(engine.model, [
      {
        promptIds: prepared.promptIds,
        embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
        maxNewTokens: job.steps,
        stopAtEos: false,
        keepPrefillLogits: true,
      },
    ]);
    return { prepared, prefillLogits: result.prefillLogits!, ids: result.ids };
  };
  const exact = await run('exact');
  const fast = await run('fast');
  const hidden = exact.prepared.visionEmbeds.length / exact.prepared.imagePositions.length;
  const embeds = embedAgreement(fast.prepared.visionEmbeds, exact.prepared.visionEmbeds, hidden);
  return {
    caseId: spec.id,
    embedRelativeError: embeds.relativeError,
    embedCosine: embeds.cosine,
    logitRelativeError: maxRelativeError(fast.prefillLogits, exact.prefillLogits),
    steps: job.steps,
    agreeingSteps: agreeingPrefix(fast.ids, exact.ids),
  };
}
