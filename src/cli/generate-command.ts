// `scriptorium generate`: greedy generation from a text prompt, streamed to stdout.
import { generate } from '../engine/generate.js';
import { textPromptIds } from '../model/debug-dump.js';
import { NativeModel } from '../engine/native-model.js';
import { Tokenizer } from '../engine/tokenizer.js';
import { resolveModelDir } from './default-model.js';
import { deviceOption } from './device-option.js';
import { QUANTIZE_USAGE, quantizeOption } from './quantize-option.js';
import { integerOption, parseCommandArgs, requireOption } from './usage.js';

const USAGE = `Usage: scriptorium generate [--model DIR] --prompt TEXT [--max-tokens N]
                           [--no-repeat-ngram N [--ngram-window W]] [--repetition-penalty P] [--threads T]
                           [--device cpu|gpu|gpu:N|auto] [--quantize none|int8]

  ${QUANTIZE_USAGE}

Without --model (or SCRIPTORIUM_MODEL) a tiny synthetic checkpoint with random weights is used.`;

export async function runGenerateCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    args,
    {
      model: { type: 'string' },
      prompt: { type: 'string' },
      'max-tokens': { type: 'string' },
      'no-repeat-ngram': { type: 'string' },
      'ngram-window': { type: 'string' },
      'repetition-penalty': { type: 'string' },
      threads: { type: 'string' },
      device: { type: 'string' },
      quantize: { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const prompt = requireOption(values.prompt, 'prompt', USAGE);
  const maxNewTokens = integerOption(values['max-tokens'], 'max-tokens', 64, USAGE);
  const ngram = integerOption(values['no-repeat-ngram'], 'no-repeat-ngram', 0, USAGE);
  const ngramWindow = integerOption(values['ngram-window'], 'ngram-window', 128, USAGE, 1);
  const threads = values.threads === undefined ? undefined : integerOption(values.threads, 'threads', 1, USAGE, 1);
  const penalty = values['repetition-penalty'] === undefined ? 1 : Number(values['repetition-penalty']);
  if (!(penalty > 0)) throw new Error('--repetition-penalty must be a positive number');

  const model = await resolveModelDir(values.model);
  const decoder = await NativeModel.load(model.dir, { threads, device: deviceOption(values.device, USAGE), quantize: quantizeOption(values.quantize, USAGE) });
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
      `${decoder.backend}${decoder.device.backend === 'cpu' ? ` × ${decoder.threads} threads` : ''}` +
      `${decoder.quantize === 'int8' ? ' | int8 experts and lm_head' : ''}\n`,
  );
  return 0;
}
