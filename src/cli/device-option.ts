// The `--device cpu|gpu|gpu:N|auto` option every engine-running command takes.
import { DEVICE_CHOICES, parseDeviceSpec } from '../engine/compute-device.js';
import { parsedBy } from './options.js';

export const DEVICE_USAGE = `--device D        where the decoder runs: ${DEVICE_CHOICES} (default cpu; auto: the first discrete GPU, else the CPU; see scriptorium devices)`;

/** Undefined when not given: the engine's default device. */
export const DEVICE_OPTION = parsedBy(parseDeviceSpec);
