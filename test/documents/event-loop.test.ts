// PDF pages render in a worker thread: the event loop keeps turning while five pages render.
// Event-loop delay is sampled every 10 ms; its maximum must stay under 50 ms.
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';

import { PdfRenderer } from '../../src/documents/pdf-renderer.js';
import { LETTER, makePdf } from '../support/make-documents.js';

test('event-loop delay stays under 50 ms while five PDF pages render at 144 DPI', async () => {
  const pdf = await makePdf(Array.from({ length: 5 }, () => LETTER), 40);
  const renderer = new PdfRenderer();
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 10);
  monitor.enable();
  const started = performance.now();
  try {
    for (let page = 0; page < 5; page++) await renderer.render(pdf, page);
  } finally {
    monitor.disable();
    clearInterval(ticker);
    await renderer.close();
  }
  const elapsed = performance.now() - started;
  const maxDelayMs = monitor.max / 1e6;
  assert.ok(elapsed > 200, `the run took ${elapsed.toFixed(0)} ms; too short to show anything`);
  assert.ok(maxDelayMs < 50, `event-loop delay reached ${maxDelayMs.toFixed(1)} ms`);
  assert.ok(ticks > elapsed / 20, `only ${ticks} timer ticks in ${elapsed.toFixed(0)} ms`);
});
