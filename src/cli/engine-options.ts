// The engine options of the commands that run the model (ocr, run, work, generate): where the
// decoder runs and how precise the CPU engine's products are. `debug dump` takes the same device
// option but keeps exact precision as its default.
import { COMMAND_DEFAULT_PRECISION, PRECISION_CHOICES } from '../engine/precision.js';
import { DEVICE_OPTION, DEVICE_USAGE } from './device-option.js';
import { choice } from './options.js';

export const ENGINE_OPTIONS = {
  device: DEVICE_OPTION,
  precision: choice(PRECISION_CHOICES).default(COMMAND_DEFAULT_PRECISION),
};

export const ENGINE_OPTIONS_USAGE = `  ${DEVICE_USAGE}
  --precision P     activations of the CPU engine's products: ${PRECISION_CHOICES.join(' or ')} (default ${COMMAND_DEFAULT_PRECISION}; see README "Precision")`;
