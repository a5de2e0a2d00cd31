// The engine options of the commands that run the model (ocr, run, work, generate): where the
// decoder runs, how precise the CPU engine's products are and whether the experts and vocabulary
// head are held in 8 bits; and the batch of the commands that read pages. `debug dump` takes the same device option but keeps exact precision as
// its default and never quantizes.
import { AUTO_CPU_BATCH, GPU_BATCH_CAP, parseBatchSize, type BatchSize } from '../engine/batch-size.js';
import type { DeviceSpec } from '../engine/compute-device.js';
import { QUANTIZE_CHOICES, type WeightQuantization } from '../engine/native-binding.js';
import { COMMAND_DEFAULT_PRECISION, PRECISION_CHOICES, type Precision } from '../engine/precision.js';
import { DEVICE_OPTION, DEVICE_USAGE } from './device-option.js';
import { choice, parsedBy } from './options.js';

export const ENGINE_OPTIONS = {
  device: DEVICE_OPTION,
  precision: choice(PRECISION_CHOICES).default(COMMAND_DEFAULT_PRECISION),
  quantize: choice(QUANTIZE_CHOICES).default('none'),
};

export const ENGINE_OPTIONS_USAGE = `  ${DEVICE_USAGE}
  --precision P     activations of the CPU engine's products: ${PRECISION_CHOICES.join(' or ')} (default ${COMMAND_DEFAULT_PRECISION}; see docs/engine.md "Precision")
  --quantize Q      ${QUANTIZE_CHOICES.join('|')}: int8 holds the experts and the vocabulary head in 8 bits, converted
                    at load (CPU decoder; default none; accuracy in docs/model.md)`;

/** `--batch N|auto` of the commands that read pages (ocr, run, work). */
export const BATCH_OPTION = parsedBy((text): BatchSize => {
  const batch = parseBatchSize(text);
  if (batch === undefined) throw new Error(`--batch must be a positive integer or auto (got "${text}")`);
  return batch;
}).default('auto');

export const BATCH_USAGE = `  --batch N|auto    most pages decoded together (default auto: ${AUTO_CPU_BATCH.size} on the CPU; on a GPU as many 1,000-token
                    pages as its memory holds beside the weights, at most ${GPU_BATCH_CAP}); a page joins the running
                    decode steps once encoded and while its KV cache fits the memory left`;

/** The engine load options the parsed ENGINE_OPTIONS name. */
export function engineChoices(values: { device?: DeviceSpec; precision: Precision; quantize: WeightQuantization }) {
  return { device: values.device, precision: values.precision, quantize: values.quantize };
}
