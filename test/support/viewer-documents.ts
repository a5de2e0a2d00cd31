// A document for the viewer's and the HTML export's tests, written straight into a storage as the pipeline would have left
// it, with known blocks, boxes, confidences and flags: a three-page PDF staged under its real docId
// (so that a retry plans the same document again), pages 1 and 2 read (page 2 needing review, one of
// page 1's blocks of low confidence), pages 3 and 4 failed with their reasons in a _FAILED_PAGES marker.
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, FailedPagesMarkerJson, PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys, documentResultKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { documentId } from '../../src/producer/doc-id.js';
import type { Storage } from '../../src/storage/storage.js';
import { LETTER, makePdf } from './make-documents.js';
import { pageResult } from './stored-results.js';

export const VIEWER_OCR_OPTIONS: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 72, maxNewTokens: 6 };
export const FAILED_PAGE = 3;
export const FAILURE_REASON = 'timed out after 600 s <while decoding>';
export const OTHER_FAILED_PAGE = 4;
export const SOURCE_URI = '/in/minutes <draft>.pdf';
/** Page 1's blocks: the second is of low confidence; one's text tries to run a script. */
export const PAGE_1_BLOCKS: PageResultJson['blocks'] = [
  { type: 'title', text: '# Minutes of the meeting', box: [60, 40, 552, 90], confidence: { mean: 0.97, min: 0.9 } },
  { type: 'text', text: 'All present. <script>alert(1)</script>', box: [60, 110, 552, 300], confidence: { mean: 0.61, min: 0.12 } },
  { type: 'table', text: '<table><tr><td>Budget</td><td>12</td></tr></table>', box: [60, 320, 400, 420], confidence: { mean: 0.88, min: 0.7 } },
];
export const PAGE_2_BLOCKS: PageResultJson['blocks'] = [{ type: 'text', text: 'The the the the the', box: [60, 60, 552, 700], confidence: { mean: 0.4, min: 0.2 } }];

export interface ViewerDocument {
  docId: string;
  source: Buffer;
}

export async function writeViewerDocument(storage: Storage): Promise<ViewerDocument> {
  const source = await makePdf([LETTER, LETTER, LETTER, LETTER], 3);
  const docId = documentId(source, VIEWER_OCR_OPTIONS);
  const put = (key: string, value: unknown) => storage.put(key, Buffer.from(`${JSON.stringify(value, null, 2)}\n`));
  await storage.put(documentKeys(docId, 'pdf').source, source);
  const pages: Array<{ page: number; blocks: PageResultJson['blocks']; review: boolean }> = [
    { page: 1, blocks: PAGE_1_BLOCKS, review: false },
    { page: 2, blocks: PAGE_2_BLOCKS, review: true },
  ];
  for (const { page, blocks, review } of pages) {
    const markdown = blocks.map((block) => block.text).join('\n\n');
    await put(pageResultKey(docId, page, 'json'), viewerPageResult(docId, page, blocks, review));
    await storage.put(pageResultKey(docId, page, 'md'), Buffer.from(`${markdown}\n`));
  }
  const completedAt = '2026-12-01T10:00:00.000Z';
  const timing = { total: 1, p50: 1, p90: 1, p99: 1, max: 1 };
  const document: DocumentResultJson = {
    docId,
    source: { uri: SOURCE_URI, type: 'pdf', pages: 4 },
    model: viewerPageResult(docId, 1, [], false).model,
    pages: [1, 2].map((page) => ({ page, status: 'done' as const, key: pageResultKey(docId, page, 'json') })),
    failedPages: [
      { page: FAILED_PAGE, reason: FAILURE_REASON },
      { page: OTHER_FAILED_PAGE, reason: 'no page result was reported' },
    ],
    timings_ms: Object.fromEntries(['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'].map((stage) => [stage, timing])) as DocumentResultJson['timings_ms'],
    completedAt,
    scriptorium: { version: '0.1.0', commit: 'test' },
    confidence: { mean: 0.62, histogram: [0, 0, 0, 0, 1, 0, 0, 0, 0, 1], leastConfident: [{ page: 2, mean: 0.4, min: 0.2 }] },
    flagged: [{ page: 2, flags: ['repetition'] }],
  };
  await put(documentResultKeys(docId).json, document);
  const marker: FailedPagesMarkerJson = { docId, sourceUri: SOURCE_URI, type: 'pdf', options: VIEWER_OCR_OPTIONS, failedPages: document.failedPages, completedAt };
  await put(documentResultKeys(docId).failedPages, marker);
  return { docId, source };
}

/** A page of LETTER size rendered at 72 dpi (612 × 792 pixels, the boxes' space), with its confidence and flags. */
function viewerPageResult(docId: string, page: number, blocks: PageResultJson['blocks'], review: boolean): PageResultJson {
  return {
    ...pageResult(docId, { width: 612, height: 792, dpi: 72, pdfPage: { width: 612, height: 792 } }, blocks),
    source: { uri: SOURCE_URI, page },
    confidence: { mean: review ? 0.4 : 0.82, min: review ? 0.2 : 0.12 },
    ...(review ? { flags: ['repetition' as const], needs_review: true } : { flags: [], needs_review: false }),
  };
}
