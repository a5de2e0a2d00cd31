// Which device runs the engine: `--device cpu|gpu|gpu:N|auto`, resolved against the Vulkan devices
// the addon reports. The addon always answers: builds without the Vulkan backend, machines without a
// Vulkan driver and machines without a GPU each say why the GPU backend is absent.
import { nativeBinding, type GpuBackendReport } from './native-binding.js';

export const DEVICE_CHOICES = 'cpu, gpu, gpu:N or auto';

/** A parsed `--device` value. `gpu` means gpu:0. */
export type DeviceSpec = { kind: 'cpu' } | { kind: 'auto' } | { kind: 'gpu'; index: number };

/** The device an engine runs on once resolved. */
export type ResolvedDevice = { backend: 'cpu' } | { backend: 'vulkan'; index: number; name: string };

export function parseDeviceSpec(text: string): DeviceSpec {
  if (text === 'cpu' || text === 'auto') return { kind: text };
  if (text === 'gpu') return { kind: 'gpu', index: 0 };
  const match = /^gpu:(\d{1,4})$/.exec(text);
  if (match) return { kind: 'gpu', index: Number(match[1]) };
  throw new Error(`--device must be ${DEVICE_CHOICES} (got "${text}")`);
}

export function gpuBackendReport(): Promise<GpuBackendReport> {
  return nativeBinding().gpuDevices();
}

/**
 * The device a spec names on this machine. auto: the first discrete GPU, else the CPU. gpu / gpu:N
 * reject with the backend's reason when it is absent, or with the devices there are when N is not one.
 */
export async function resolveDevice(spec: DeviceSpec, report?: GpuBackendReport): Promise<ResolvedDevice> {
  if (spec.kind === 'cpu') return { backend: 'cpu' };
  const gpu = report ?? (await gpuBackendReport());
  if (spec.kind === 'auto') {
    const discrete = gpu.devices.find((d) => d.type === 'discrete' && d.computeQueue);
    return discrete ? { backend: 'vulkan', index: discrete.index, name: discrete.name } : { backend: 'cpu' };
  }
  if (!gpu.available) throw new Error(`--device gpu: the GPU backend is not available: ${gpu.reason ?? 'no reason given'}`);
  const device = gpu.devices.find((d) => d.index === spec.index);
  if (!device) {
    const known = gpu.devices.map((d) => `gpu:${d.index} (${d.name})`).join(', ');
    throw new Error(`--device gpu:${spec.index}: no such Vulkan device; this machine has ${known || 'none'}`);
  }
  if (!device.computeQueue) throw new Error(`--device gpu:${spec.index}: ${device.name} has no compute queue`);
  return { backend: 'vulkan', index: device.index, name: device.name };
}

/** How results, status and metrics name a device: `cpu-<kernels>` or `vulkan:<device name>`. */
export function deviceLabel(device: ResolvedDevice, cpuKernels: string): string {
  return device.backend === 'cpu' ? `cpu-${cpuKernels}` : `vulkan:${device.name}`;
}
