// How many CPUs this process may really use: the CPUs it may run on, capped by the CPU quota of its
// cgroup (a container's `cpus:` limit, a Kubernetes CPU limit), so that the engine's default thread
// count never oversubscribes a limited container. os.availableParallelism() sees only the CPUs, not
// the quota: a worker limited to 4 CPUs on a 64-core node would otherwise start 64 threads and be
// throttled.
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
  const membership = readText(procSelfCgroup) ?? '';
  const quotas: number[] = [];
  // cgroup v2: one line "0::/path".
  const v2 = /^0::(\/.*)$/m.exec(membership)?.[1];
  if (v2 !== undefined) {
    for (const dir of selfAndAncestors(cgroupRoot, v2)) {
      const [quota, period] = (readText(path.join(dir, 'cpu.max')) ?? '').trim().split(/\s+/);
      const cpus = cpusOfQuota(quota ?? '', period ?? '');
      if (cpus !== undefined) quotas.push(cpus);
    }
  }
  // cgroup v1: "<id>:cpu,cpuacct:/path" (controllers in any order).
  const v1 = /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(\/.*)$/m.exec(membership)?.[1];
  if (v1 !== undefined) {
    for (const mount of ['cpu', 'cpu,cpuacct']) {
      for (const dir of selfAndAncestors(path.join(cgroupRoot, mount), v1)) {
        const quota = readText(path.join(dir, 'cpu.cfs_quota_us'))?.trim();
        const period = readText(path.join(dir, 'cpu.cfs_period_us'))?.trim();
        const cpus = cpusOfQuota(quota ?? '', period ?? '');
        if (cpus !== undefined) quotas.push(cpus);
      }
    }
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
