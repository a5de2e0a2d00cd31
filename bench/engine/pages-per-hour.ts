// Pages per hour of one worker's engine at several decode batch sizes: every page is prepared
// (preprocess + vision encode) and then decoded in a ContinuousBatch, all pages concurrently, the way
// the page worker runs them. Random weights give random text, so every page generates exactly
// --tokens tokens (no EOS stop). Outside `npm run bench` because it takes minutes per batch size:
//   node dist/bench/engine/pages-per-hour.js --model DIR [--pages 20] [--batch 1,8] [--tokens 400] [--precision P] [--quantize int8]
import { defineCommand, type CommandLine } from '../../src/cli/command-line.js';
import { ENGINE_OPTIONS, engineChoices } from '../../src/cli/engine-options.js';
import { integer, integers, text } from '../../src/cli/options.js';
import { exitWith, runCommandLine } from '../../src/cli/usage.js';
import { ContinuousBatch } from '../../src/engine/generate.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import { generationDefaults } from '../../src/engine/prompts.js';
import { warmUpDecoder } from './decoder-warm-up.js';
import { syntheticPage } from './page-cases.js';

const USAGE = `Usage: node dist/bench/engine/pages-per-hour.js --model DIR [--pages N] [--batch B1,B2,...] [--tokens T] [--device D] [--precision P] [--quantize none|int8]

Reads N synthetic A4 pages (base mode) at each batch size and prints pages/hour.`;

const A4_150_DPI: [number, number] = [1240, 1754];

const OPTIONS = {
  model: text().required(),
  pages: integer({ min: 1 }).default(20),
  batch: integers({ min: 1 }).default([1, 8]),
  tokens: integer({ min: 1 }).default(400),
  ...ENGINE_OPTIONS,
};

async function main({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { pages, tokens, batch: batches } = values;
  const engine = await OcrEngine.load(values.model, engineChoices(values));
  await warmUpDecoder(engine.model);
  const task = engine.defaultTask();  // markdown on V1 and V2, parse on V3
  await engine.prepare([syntheticPage(A4_150_DPI, 0)], task, 'base');  // untimed: vision weights into memory
  const { noRepeatNgram } = generationDefaults(engine.variant, task);
  process.stdout.write(`${engine.variant}, ${engine.model.kernels} × ${engine.model.threads} threads, quantize ${engine.model.quantize}, ${pages} pages, ${tokens} tokens each\n`);
  process.stdout.write(`batch  seconds  pages/hour  generated tok/s  × batch ${batches[0]}\n`);
  let firstPagesPerHour = 0;
  for (const batch of batches) {
    const decoding = new ContinuousBatch(engine.model, batch);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: pages }, async (_, i) => {
        const prepared = await engine.prepare([syntheticPage(A4_150_DPI, i)], task, 'base');
        const result = await decoding.generate({
          promptIds: prepared.promptIds,
          embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
          maxNewTokens: tokens,
          stopAtEos: false,
          noRepeatNgram,
        });
        if (result.ids.length !== tokens) throw new Error(`page ${i} generated ${result.ids.length} tokens, not ${tokens}`);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const pagesPerHour = (pages * 3600) / seconds;
    firstPagesPerHour ||= pagesPerHour;
    process.stdout.write(
      `${String(batch).padStart(5)}  ${seconds.toFixed(1).padStart(7)}  ${pagesPerHour.toFixed(0).padStart(10)}  ${((pages * tokens) / seconds).toFixed(1).padStart(15)}  ${(pagesPerHour / firstPagesPerHour).toFixed(2).padStart(9)}\n`,
    );
  }
  return 0;
}

exitWith('pages-per-hour', runCommandLine(defineCommand({ usage: USAGE, options: OPTIONS, run: main }), process.argv.slice(2), 'pages-per-hour'));
