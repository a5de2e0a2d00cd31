// An assembled document's results written straight into a storage, as the document worker leaves
// them, for the tests of what is made from results (searchable PDFs, `scriptorium results`).
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys, documentResultKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import type { Storage } from '../../src/storage/storage.js';

/** A page's result JSON with these blocks (its markdown their text), rendered as `render` says. */
export function pageResult(docId: string, render: PageResultJson['render'], blocks: PageResultJson['blocks']): PageResultJson {
  return {
    docId,
    source: { uri: 'test', page: 1 },
    render,
    model: { variant: 'v1', task: 'markdown', mode: 'tiny', checkpoint: 'sha256:test', synthetic: true },
    markdown: blocks.map((block) => block.text).join('\n\n'),
    blocks,
    tokens: { prompt: 1, image: 1, generated: 1 },
    finish: 'eos',
    timings_ms: { queued: 0, fetch: 0, render: 0, preprocess: 0, encode: 0, prefill: 0, decode: 0, postprocess: 0, store: 0, total: 0 },
    worker: { host: 'test', backend: 'cpu', attempt: 1 },
    scriptorium: { version: '0.1.0', commit: 'unknown' },
  };
}

/** The staged source, every page's result (page n's is pages[n - 1]), document.json and _DONE. */
export async function storeAssembledDocument(storage: Storage, docId: string, type: 'pdf' | 'png', source: Uint8Array, ...pages: PageResultJson[]): Promise<void> {
  await storage.put(documentKeys(docId, type).source, Buffer.from(source));
  for (const [index, page] of pages.entries()) await storage.put(pageResultKey(docId, index + 1, 'json'), Buffer.from(JSON.stringify(page)));
  const document = {
    docId,
    source: { uri: 'test', type, pages: pages.length },
    model: pages[0].model,
    pages: pages.map((_, index) => ({ page: index + 1, status: 'done', key: pageResultKey(docId, index + 1, 'json') })),
    failedPages: [],
    completedAt: new Date(0).toISOString(),
  } as unknown as DocumentResultJson;
  const keys = documentResultKeys(docId);
  await storage.put(keys.json, Buffer.from(JSON.stringify(document)));
  await storage.put(keys.done, Buffer.from(''));
}
