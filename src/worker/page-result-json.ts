// One page's engine result as results/<docId>/pages/<nnnn>.json (docs/design.md "Results").
import type { PageResult } from '../engine/ocr-engine.js';
import type { PdfPagePoints } from '../documents/document.js';
import { DEFAULT_PDF_DPI } from '../documents/pdf-render-size.js';
import type { PageJobData, StageTimings } from '../jobs/job-types.js';
import { needsReview, pageFlagsOf } from '../jobs/page-flags.js';
import { checkPageResultJson, type OcrBlockJson, type PageRenderJson, type PageResultJson } from '../jobs/result-json.js';
import { scriptoriumBuild } from '../output/build-info.js';

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
  image: { width: number; height: number; pagePoints?: PdfPagePoints },
): PageResultJson {
  const { variant, task, mode } = data.options;
  const flags = pageFlagsOf({ finish: result.finish, looping: result.repetition !== undefined, markdown: result.markdown });
  return checkPageResultJson({
    docId: data.docId,
    source: { uri: data.sourceUri, page },
    render: pageRender(data, image),
    model: { variant, task, mode, checkpoint: reader.checkpoint, synthetic: reader.synthetic },
    markdown: result.markdown,
    blocks: result.blocks.map(({ type, text, box, confidence }): OcrBlockJson => (box ? { type, text, box, confidence } : { type, text, confidence })),
    paragraphs: result.paragraphs.map(({ text, confidence }) => ({ text, confidence })),
    confidence: result.confidence,
    tokens: { prompt: result.tokens.prompt, image: result.tokens.image, generated: result.tokens.generated },
    finish: result.finish,
    flags,
    needs_review: needsReview(flags),
    ...(result.repetition === undefined ? {} : { repetition: result.repetition }),
    timings_ms: timings,
    worker: { host: reader.host, backend: reader.backend, attempt },
    scriptorium: scriptoriumBuild(),
  });
}

/** The image's size; for a PDF page also its size in points and the dpi or longest side it was rendered at. */
function pageRender({ options }: PageJobData, image: { width: number; height: number; pagePoints?: PdfPagePoints }): PageRenderJson {
  const { width, height, pagePoints } = image;
  if (pagePoints === undefined) return { width, height };
  const size = options.longestSide === undefined ? { dpi: options.dpi ?? DEFAULT_PDF_DPI } : { longestSide: options.longestSide };
  return { width, height, ...size, pdfPage: { width: pagePoints.width, height: pagePoints.height } };
}
