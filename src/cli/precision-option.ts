// The `--precision exact|fast` option of the engine-running commands.
import { parsePrecision, PRECISION_CHOICES, type Precision } from '../engine/precision.js';
import { UsageError } from './usage.js';

export function precisionUsage(fallback: Precision): string {
  return `--precision P     activations of the CPU engine's products: ${PRECISION_CHOICES.join(' or ')} (default ${fallback}; see README "Precision")`;
}

/** The precision named by --precision, or `fallback` when it is absent. */
export function precisionOption(value: string | undefined, fallback: Precision, usage: string): Precision {
  if (value === undefined) return fallback;
  try {
    return parsePrecision(value);
  } catch (error) {
    throw new UsageError((error as Error).message, usage);
  }
}
