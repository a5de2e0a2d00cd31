// `scriptorium devices`: the compute devices this machine offers the engine.
import { gpuBackendReport } from '../engine/compute-device.js';
import { nativeBinding, type GpuDeviceInfo } from '../engine/native-binding.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { flag } from './options.js';

const USAGE = `Usage: scriptorium devices [--json]

Lists the CPU kernel sets and the Vulkan devices (memory, shader paths) that --device can name.`;

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

function describe(d: GpuDeviceInfo): string {
  const coop = d.cooperativeMatrixExtensions.length > 0 ? d.cooperativeMatrixExtensions.join(', ') : 'none';
  return (
    `gpu:${d.index}  ${d.name}  (${d.type}, Vulkan ${d.apiVersion}, ${gib(d.memoryBytes)}, budget ${gib(d.memoryBudgetBytes)}, binding limit ${mib(d.bindingLimitBytes)}, subgroup ${d.subgroupSize})\n` +
    `        shader paths: ${d.shaderPaths.join(', ') || 'none (no compute queue)'}${d.matmulPath ? ` (matrix products with --precision fast: ${d.matmulPath})` : ''}; cooperative matrix: ${coop}`
  );
}

const OPTIONS = { json: flag() };

export const devicesCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: listDevices });

async function listDevices({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const cpuKernels = nativeBinding().supportedKernelSets();
  const gpu = await gpuBackendReport();
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ cpu: { kernels: cpuKernels }, gpu }, null, 2)}\n`);
    return 0;
  }
  const lines = [`cpu     kernel sets: ${cpuKernels.join(', ')}`];
  for (const d of gpu.devices) lines.push(describe(d));
  if (!gpu.available) lines.push(`GPU backend not available: ${gpu.reason ?? 'no reason given'}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
