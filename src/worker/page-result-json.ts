// One page's engine result as results/<docId>/pages/<nnnn>.json (DESIGN.md "Results").
import type { PageResult } from '../engine/ocr-engine.js';
import type { PageJobData, StageTimings } from '../jobs/job-types.js';
import { checkPageResultJson, type OcrBlockJson, type PageResultJson } from '../jobs/result-json.js';

/** What the result says about the worker and the model that read the page. */
export interface PageReader {
  host: string;
  backend: string;
  checkpoint: string;
  synthetic: boolean;
}

export function pageResultJson(
  data: PageJobData,
  page: number,
  result: PageResult,
  timings: StageTimings,
  reader: PageReader,
  attempt: number,
): PageResultJson {
  const { variant, task, mode } = data.options;
  return checkPageResultJson({
    docId: data.docId,
    source: { uri: data.sourceUri, page },
    model: { variant, task, mode, checkpoint: reader.checkpoint, synthetic: reader.synthetic },
    markdown: result.markdown,
    blocks: result.blocks.map(({ type, text, box }): OcrBlockJson => (box ? { type, text, box } : { type, text })),
    tokens: { prompt: result.tokens.prompt, image: result.tokens.image, generated: result.tokens.generated },
    finish: result.finish,
    timings_ms: timings,
    worker: { host: reader.host, backend: reader.backend, attempt },
  });
}
