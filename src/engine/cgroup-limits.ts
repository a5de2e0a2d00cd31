// What this process may really use of the machine: the CPUs it may run on, capped by its cgroup's
// CPU quota (a container's `cpus:` limit, a Kubernetes CPU limit), and the memory, capped by its
// cgroup's memory limit. os.availableParallelism() and os.totalmem() see the machine, not the
// limits: a worker limited to 4 CPUs on a 64-core node would otherwise start 64 threads and be
// throttled, and one limited to 16 GiB would size its batch for the node's memory and be killed.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where the cgroup file systems are mounted. */
const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * CPUs allowed by one cgroup v2 `cpu.max` ("<quota> <period>" or "max <period>"), or by cgroup v1's
 * cpu.cfs_quota_us and cpu.cfs_period_us (quota -1: none): undefined when there is no quota.
 */
export function cpusOfQuota(quota: string, period: string): number | undefined {
  const quotaUs = Number(quota);
  const periodUs = Number(period);
  if (quota === 'max' || !(quotaUs > 0) || !(periodUs > 0)) return undefined;
  return quotaUs / periodUs;
}

/** The quotas that apply to this process, one per cgroup from its own up to the root, as CPUs. */
export function cgroupCpuQuotas(cgroupRoot = CGROUP_ROOT, procSelfCgroup = '/proc/self/cgroup'): number[] {
  const quotas: number[] = [];
  for (const dir of cgroupDirs(cgroupRoot, procSelfCgroup, 'v2')) {
    const [quota, period] = (readText(path.join(dir, 'cpu.max')) ?? '').trim().split(/\s+/);
    const cpus = cpusOfQuota(quota ?? '', period ?? '');
    if (cpus !== undefined) quotas.push(cpus);
  }
  for (const dir of cgroupDirs(cgroupRoot, procSelfCgroup, 'cpu')) {
    const quota = readText(path.join(dir, 'cpu.cfs_quota_us'))?.trim();
    const period = readText(path.join(dir, 'cpu.cfs_period_us'))?.trim();
    const cpus = cpusOfQuota(quota ?? '', period ?? '');
    if (cpus !== undefined) quotas.push(cpus);
  }
  return quotas;
}

/**
 * Threads that fit this process's CPU allowance: the CPUs it may run on, capped by the tightest cgroup
 * quota rounded down (1.5 CPUs give 1 thread: a second would be throttled), and at least 1.
 */
export function cpuLimit(available = os.availableParallelism(), quotas: readonly number[] = cgroupCpuQuotas()): number {
  const quota = Math.min(Infinity, ...quotas);
  return Math.max(1, Math.min(available, Math.floor(quota)));
}

/**
 * The memory limits that apply to this process, in bytes, one per cgroup from its own up to the
 * root: cgroup v2's memory.max ("max": none), cgroup v1's memory.limit_in_bytes (a huge value: none).
 */
export function cgroupMemoryLimits(cgroupRoot = CGROUP_ROOT, procSelfCgroup = '/proc/self/cgroup'): number[] {
  const limits: number[] = [];
  const files = [
    ...cgroupDirs(cgroupRoot, procSelfCgroup, 'v2').map((dir) => path.join(dir, 'memory.max')),
    ...cgroupDirs(cgroupRoot, procSelfCgroup, 'memory').map((dir) => path.join(dir, 'memory.limit_in_bytes')),
  ];
  for (const file of files) {
    const bytes = Number(readText(file)?.trim() ?? 'max');
    // cgroup v1 writes "no limit" as the largest page-aligned 64-bit value, far beyond any machine.
    if (bytes > 0 && bytes < 2 ** 62) limits.push(bytes);
  }
  return limits;
}

/** Bytes this process may hold: the machine's memory, capped by the tightest cgroup limit. */
export function memoryLimit(total = os.totalmem(), limits: readonly number[] = cgroupMemoryLimits()): number {
  return Math.min(total, ...limits);
}

/**
 * The folders of this process's cgroup and its parents: for cgroup v2 ('v2', one line "0::/path" in
 * /proc/self/cgroup) under the root, for a cgroup v1 controller ("<id>:cpu,cpuacct:/path", the
 * controllers in any order) under each mount that controller may have.
 */
function cgroupDirs(cgroupRoot: string, procSelfCgroup: string, controller: 'v2' | 'cpu' | 'memory'): string[] {
  const membership = readText(procSelfCgroup) ?? '';
  if (controller === 'v2') {
    const v2 = /^0::(\/.*)$/m.exec(membership)?.[1];
    return v2 === undefined ? [] : selfAndAncestors(cgroupRoot, v2);
  }
  const v1 = new RegExp(`^\\d+:(?:[^:]*,)?${controller}(?:,[^:]*)?:(/.*)$`, 'm').exec(membership)?.[1];
  if (v1 === undefined) return [];
  const mounts = controller === 'cpu' ? ['cpu', 'cpu,cpuacct'] : ['memory'];
  return mounts.flatMap((mount) => selfAndAncestors(path.join(cgroupRoot, mount), v1));
}

/**
 * The cgroup's folder and its parents' under `root` (a container sees its own cgroup at the root of
 * the mount, while /proc/self/cgroup may still name the host's path: a folder that does not exist is
 * skipped, and the root itself is always read).
 */
function selfAndAncestors(root: string, cgroupPath: string): string[] {
  const dirs: string[] = [];
  for (let current = path.posix.normalize(cgroupPath); ; current = path.posix.dirname(current)) {
    dirs.push(path.join(root, current));
    if (current === '/') break;
  }
  return dirs;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
