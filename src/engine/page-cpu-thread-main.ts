// Worker thread of PageCpuThreads: preprocesses page images (the Pillow-exact resizes, tiling,
// normalisation), post-processes decoded text and looks for loops in generated ids, so that none of
// it runs on the event loop.
import { parentPort } from 'node:worker_threads';

import { preprocessPage } from './image-preprocess.js';
import { parseMultiPageOutput, parsePageOutput } from './ocr-postprocess.js';
import type { PageCpuReply, PageCpuRequest } from './page-cpu-pool.js';
import { findRepetition } from './repetition.js';

if (!parentPort) throw new Error('page-cpu-thread-main.js runs as a worker thread of PageCpuThreads');
const port = parentPort;

port.on('message', (request: PageCpuRequest) => {
  try {
    if (request.kind === 'preprocess') {
      const page = preprocessPage(request.image, request.variant, request.mode);
      const transfer = [page.global.buffer as ArrayBuffer];
      if (page.tiles) transfer.push(page.tiles.buffer as ArrayBuffer);
      port.postMessage({ id: request.id, ok: true, kind: 'preprocess', page } satisfies PageCpuReply, transfer);
    } else if (request.kind === 'postprocess') {
      const page = parsePageOutput(request.rawText, request.size, request.pageIndex);
      port.postMessage({ id: request.id, ok: true, kind: 'postprocess', pages: [page] } satisfies PageCpuReply);
    } else if (request.kind === 'postprocess-multi') {
      const pages = parseMultiPageOutput(request.rawText, request.sizes);
      port.postMessage({ id: request.id, ok: true, kind: 'postprocess', pages } satisfies PageCpuReply);
    } else {
      const repetition = findRepetition(request.ids);
      port.postMessage({ id: request.id, ok: true, kind: 'repetition', repetition } satisfies PageCpuReply);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    port.postMessage({ id: request.id, ok: false, message } satisfies PageCpuReply);
  }
});
