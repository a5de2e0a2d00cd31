// The `--device cpu|gpu|gpu:N|auto` option every engine-running command takes.
import { DEVICE_CHOICES, parseDeviceSpec, type DeviceSpec } from '../engine/compute-device.js';
import { UsageError } from './usage.js';

export const DEVICE_USAGE = `--device D        where the decoder runs: ${DEVICE_CHOICES} (default cpu; auto: the first discrete GPU, else the CPU; see scriptorium devices)`;

export function deviceOption(value: string | undefined, usage: string): DeviceSpec | undefined {
  if (value === undefined) return undefined;
  try {
    return parseDeviceSpec(value);
  } catch (error) {
    throw new UsageError((error as Error).message, usage);
  }
}
