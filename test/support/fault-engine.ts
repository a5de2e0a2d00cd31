// Test-only preload for worker child processes, to inject engine faults without test switches in
// the product: `node --import ./dist/test/support/fault-engine.js dist/src/cli/main.js work …`.
// It wraps OcrEngine.prototype.recognizePages as the environment asks:
//   SCRIPTORIUM_TEST_FAULT=kill   a batch holding a poison page (an image of POISON_PAGE's size)
//                                 SIGKILLs its own process, as a crash in native code would
//   SCRIPTORIUM_TEST_FAULT=hang   such a batch never returns and ignores its deadline, as a native
//                                 call that never comes back
//   SCRIPTORIUM_TEST_SLOW_MS=N    every batch first waits N ms, so that a test can act mid-page
// Every batch writes `fault-engine: reading <w>x<h>,…` to stderr as it starts.
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';

/** The size of a poison page image; no page of the other test documents has it. */
export const POISON_PAGE = { width: 157, height: 211 };

export const READING_LINE = 'fault-engine: reading';

const fault = process.env.SCRIPTORIUM_TEST_FAULT ?? '';
const slowMs = Number(process.env.SCRIPTORIUM_TEST_SLOW_MS ?? 0);
if (!['', 'kill', 'hang'].includes(fault)) throw new Error(`fault-engine: unknown SCRIPTORIUM_TEST_FAULT "${fault}"`);

const recognizePages = OcrEngine.prototype.recognizePages;
OcrEngine.prototype.recognizePages = async function recognizePagesWithFaults(this: OcrEngine, images: readonly RgbImage[], options) {
  process.stderr.write(`${READING_LINE} ${images.map((image) => `${image.width}x${image.height}`).join(',')}\n`);
  if (slowMs > 0) await new Promise((resolve) => setTimeout(resolve, slowMs));
  const poisoned = images.some((image) => image.width === POISON_PAGE.width && image.height === POISON_PAGE.height);
  if (poisoned && fault === 'kill') process.kill(process.pid, 'SIGKILL');
  if (poisoned && fault === 'hang') return new Promise<never>(() => undefined);
  return recognizePages.call(this, images, options);
};
