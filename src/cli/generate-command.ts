// `scriptorium generate`: greedy generation from a text prompt, streamed to stdout.
import { generate } from '../engine/generate.js';
import { textPromptIds } from '../model/debug-dump.js';
import { NativeModel } from '../engine/native-model.js';
import { Tokenizer } from '../engine/tokenizer.js';
import { resolveModelDir } from '../model/model-resolve.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { COMMAND_DEFAULT_PRECISION } from '../engine/precision.js';
import { ENGINE_OPTIONS, engineChoices } from './engine-options.js';
import { integer, positiveNumber, text } from './options.js';

const USAGE = `Usage: scriptorium generate [--model DIR] --prompt TEXT [--max-tokens N]
                           [--no-repeat-ngram N [--ngram-window W]] [--repetition-penalty P] [--threads T]
                           [--device cpu|gpu|gpu:N|auto] [--precision exact|fast] [--quantize none|int8]

Without --model (or SCRIPTORIUM_MODEL) a tiny synthetic checkpoint with random weights is used.
--precision defaults to ${COMMAND_DEFAULT_PRECISION} (see docs/engine.md "Precision").`;

const OPTIONS = {
  model: text(),
  prompt: text().required(),
  'max-tokens': integer({ min: 0 }).default(64),
  'no-repeat-ngram': integer({ min: 0 }).default(0),
  'ngram-window': integer({ min: 1 }).default(128),
  'repetition-penalty': positiveNumber().default(1),
  threads: integer({ min: 1 }),
  ...ENGINE_OPTIONS,
};

export const generateCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runGenerate });

async function runGenerate({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { prompt, threads, 'max-tokens': maxNewTokens, 'no-repeat-ngram': ngram, 'ngram-window': ngramWindow, 'repetition-penalty': penalty } = values;
  const model = await resolveModelDir(values.model);
  const decoder = await NativeModel.load(model.dir, { threads, ...engineChoices(values) });
  const tokenizer = await Tokenizer.fromDir(model.dir);
  const started = performance.now();
  const [result] = await generate(decoder, [
    {
      promptIds: textPromptIds(tokenizer, decoder.config.bosId, prompt),
      maxNewTokens,
      noRepeatNgram: ngram > 0 ? { size: ngram, window: ngramWindow } : undefined,
      repetitionPenalty: penalty,
      stream: { text: tokenizer.streamDecoder(), onText: (delta) => process.stdout.write(delta) },
    },
  ]);
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write('\n');
  process.stderr.write(
    `${decoder.config.variant} ${model.synthetic ? '(synthetic) ' : ''}| prompt ${result.promptTokens} tokens | ` +
      `generated ${result.ids.length} (${result.finish}) | ${(result.ids.length / seconds).toFixed(1)} tokens/s | ` +
      `${decoder.backend}${decoder.device.backend === 'cpu' ? ` × ${decoder.threads} threads, ${decoder.precision} precision` : ''}` +
      `${decoder.quantize === 'int8' ? ' | int8 experts and lm_head' : ''}\n`,
  );
  return 0;
}
