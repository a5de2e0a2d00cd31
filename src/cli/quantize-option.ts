// The `--quantize none|int8` option of the commands that run the engine (ocr, run, work, generate).
import { QUANTIZE_CHOICES, type WeightQuantization } from '../engine/native-model.js';
import { UsageError } from './usage.js';

export const QUANTIZE_USAGE = `--quantize Q      ${QUANTIZE_CHOICES.join('|')}: int8 holds the experts and the vocabulary head in 8 bits, converted at load (CPU decoder; default none; accuracy in docs/model.md)`;

export function quantizeOption(value: string | undefined, usage: string): WeightQuantization | undefined {
  if (value === undefined) return undefined;
  const choice = QUANTIZE_CHOICES.find((c) => c === value);
  if (!choice) throw new UsageError(`--quantize must be one of ${QUANTIZE_CHOICES.join(', ')}, got '${value}'`, usage);
  return choice;
}
