// deploy/kubernetes/ and docker-compose.yml as an operator deploys them: each overlay resolved (test
// support kustomize) and every object validated against the Kubernetes 1.27 and KEDA schemas of the
// kubernetes-models packages, then the properties the workers rely on: graceful termination past
// the page deadline, probes on the worker's health endpoints, threads from the CPU limit, Redis with
// AOF and noeviction, secrets only from a Secret, a ScaledObject that scales from zero on the
// dashboard's /queue-depth, GPU workers on the GPU with the driver's Vulkan files mounted; and the
// Node.js the images are built on.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';

import { PACKED_WEIGHTS_DIR_VARIABLE } from '../../src/engine/native-model.js';
import type { PageQueueDepth } from '../../src/queue/queue-depth.js';
import { DEFAULT_HANG_GRACE_MS, DEFAULT_PAGE_TIMEOUT_MS } from '../../src/worker/page-worker.js';
import { containersOf, kustomize, readYamlDocuments, strategicMerge, type K8sObject } from '../support/kustomize.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const OVERLAYS = ['cpu', 'gpu'] as const;
/** The Node.js major the images are built on: the current LTS. */
const IMAGE_NODE_MAJOR = 24;
/**
 * Environment variables a container may set as literals: the container runtime's settings, which are
 * no configuration of Scriptorium's (that comes from the ConfigMap) and no secret.
 */
const RUNTIME_VARIABLES = ['NVIDIA_DRIVER_CAPABILITIES'];

/** The schema model of each kind the manifests may hold; any other kind fails the test. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};

function overlay(name: string): K8sObject[] {
  return kustomize(path.join(ROOT, 'deploy/kubernetes/overlays', name));
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `no ${kind} ${name}`);
  return found;
}

type Container = { name: string; args?: string[]; env?: { name: string; value?: string }[]; resources?: { requests?: Record<string, string>; limits?: Record<string, string> } } & Record<string, unknown>;
type Probe = { httpGet?: { path: string; port: string | number } };

function workerContainer(objects: K8sObject[]): Container {
  const [container] = containersOf(find(objects, 'Deployment', 'scriptorium-worker')) as Container[];
  return container;
}

/** A gjson path of plain keys, as KEDA's metrics-api scaler reads valueLocation. */
function valueAt(body: unknown, location: string): unknown {
  return location.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], body);
}

/** KEDA's replica count for one metrics-api trigger: 0 below activation, else ceil(value / target), capped. */
function kedaReplicas(scaled: K8sObject, body: unknown): number {
  const spec = scaled.spec as { minReplicaCount: number; maxReplicaCount: number; triggers: { metadata: Record<string, string> }[] };
  const { valueLocation, targetValue, activationTargetValue } = spec.triggers[0].metadata;
  const value = Number(valueAt(body, valueLocation));
  assert.ok(Number.isFinite(value), `${valueLocation} is no number in ${JSON.stringify(body)}`);
  if (value <= Number(activationTargetValue ?? 0)) return spec.minReplicaCount;
  return Math.min(spec.maxReplicaCount, Math.max(1, Math.ceil(value / Number(targetValue))));
}

function depth(pending: number, active: number): PageQueueDepth {
  const unclaimed = pending - active;
  return { queue: '{scriptorium}:pages-v3', waiting: 0, prioritized: unclaimed, delayed: 0, paused: 0, active, unclaimed, pending };
}

describe('kustomize support', () => {
  test('strategic merge: maps merge, named lists merge by name, other lists are replaced, null deletes', () => {
    const base = { spec: { containers: [{ name: 'a', image: 'x', args: ['1'] }, { name: 'b', image: 'y' }], tolerations: [{ key: 'k' }], keep: 1, drop: 2 } };
    const patch = { spec: { containers: [{ name: 'a', args: ['2'] }, { name: 'c', image: 'z' }], tolerations: [{ key: 'n' }], drop: null } };
    assert.deepEqual(strategicMerge(base, patch), {
      spec: { containers: [{ name: 'a', image: 'x', args: ['2'] }, { name: 'b', image: 'y' }, { name: 'c', image: 'z' }], tolerations: [{ key: 'n' }], keep: 1 },
    });
  });
});

for (const name of OVERLAYS) {
  describe(`deploy/kubernetes/overlays/${name}`, () => {
    const objects = overlay(name);

    test('every object validates against its Kubernetes or KEDA schema', () => {
      for (const object of objects) {
        const Model = MODELS[`${object.apiVersion}/${object.kind}`];
        assert.ok(Model, `${object.apiVersion} ${object.kind} ${object.metadata.name}: no schema model for this kind`);
        assert.doesNotThrow(() => new Model(object as never).validate(), `${object.kind} ${object.metadata.name}`);
      }
    });

    test('every namespaced object is in the scriptorium namespace, with the part-of label', () => {
      for (const object of objects.filter((o) => o.kind !== 'Namespace')) assert.equal(object.metadata.namespace, 'scriptorium', `${object.kind} ${object.metadata.name}`);
      for (const object of objects) assert.equal(object.metadata.labels?.['app.kubernetes.io/part-of'], 'scriptorium');
      for (const object of objects) for (const container of containersOf(object)) assert.notEqual(container.image, 'scriptorium', 'the images transformer names the image');
    });

    test("a worker's grace period outlasts a page's deadline and hang grace", () => {
      const worker = find(objects, 'Deployment', 'scriptorium-worker');
      const grace = (worker.spec as { template: { spec: { terminationGracePeriodSeconds: number } } }).template.spec.terminationGracePeriodSeconds;
      assert.ok(grace > (DEFAULT_PAGE_TIMEOUT_MS + DEFAULT_HANG_GRACE_MS) / 1000, `grace ${grace} s`);
    });

    test('worker probes ask /healthz and /readyz on the port `work --metrics-port` serves', () => {
      const container = workerContainer(objects);
      const args = container.args ?? [];
      const port = Number(args[args.indexOf('--metrics-port') + 1]);
      assert.equal(args[0], 'work');
      const ports = container.ports as { name: string; containerPort: number }[];
      assert.deepEqual(ports, [{ name: 'metrics', containerPort: port }]);
      const probe = (key: string) => (container[key] as Probe).httpGet;
      assert.deepEqual(probe('livenessProbe'), { path: '/healthz', port: 'metrics' });
      assert.deepEqual(probe('readinessProbe'), { path: '/readyz', port: 'metrics' });
    });

    test("a worker's threads follow its CPU limit: whole CPUs, requests equal to limits, no --threads", () => {
      const { args, resources } = workerContainer(objects);
      assert.ok(!(args ?? []).includes('--threads'));
      const cpu = resources?.limits?.cpu ?? '';
      assert.match(cpu, /^\d+$/);
      assert.equal(resources?.requests?.cpu, cpu);
      assert.equal(resources?.requests?.memory, resources?.limits?.memory);
    });

    test('voluntary disruptions take one worker at a time', () => {
      const pdb = find(objects, 'PodDisruptionBudget', 'scriptorium-worker');
      assert.deepEqual(pdb.spec, { maxUnavailable: 1, selector: { matchLabels: { 'app.kubernetes.io/name': 'scriptorium-worker' } } });
    });

    test('Redis keeps an append-only file and never evicts', () => {
      const [redis] = containersOf(find(objects, 'StatefulSet', 'scriptorium-redis')) as Container[];
      const args = (redis.args ?? []).join(' ');
      assert.match(args, /--appendonly yes/);
      assert.match(args, /--maxmemory-policy noeviction/);
    });

    test('configuration comes from the ConfigMap and secrets from the Secret, never from literal values', () => {
      const config = find(objects, 'ConfigMap', 'scriptorium-config').data as Record<string, string>;
      assert.equal(config.REDIS_URL, 'redis://scriptorium-redis:6379');
      for (const key of Object.keys(config)) assert.doesNotMatch(key, /SECRET|PASSWORD|TOKEN|ACCESS_KEY/);
      for (const object of objects) {
        for (const container of containersOf(object) as Container[]) {
          for (const variable of container.env ?? []) {
            if (!RUNTIME_VARIABLES.includes(variable.name)) assert.equal(variable.value, undefined, `${object.metadata.name}: ${variable.name} is a literal`);
          }
          if (object.metadata.name.startsWith('scriptorium-redis')) continue;
          assert.deepEqual(container.envFrom, [
            { configMapRef: { name: 'scriptorium-config' } },
            { secretRef: { name: 'scriptorium-secrets', optional: true } },
          ]);
        }
      }
    });

    test('the ScaledObject scales the worker Deployment from zero on the dashboard Service /queue-depth', () => {
      const scaled = find(objects, 'ScaledObject', 'scriptorium-worker');
      const spec = scaled.spec as { scaleTargetRef: { name: string }; minReplicaCount: number; triggers: { type: string; metadata: Record<string, string> }[] };
      assert.equal(spec.scaleTargetRef.name, 'scriptorium-worker');
      assert.equal(spec.minReplicaCount, 0);
      const [trigger] = spec.triggers;
      assert.equal(trigger.type, 'metrics-api');
      const url = new URL(trigger.metadata.url);
      const dashboard = find(objects, 'Service', 'scriptorium-dashboard');
      assert.equal(url.hostname, `${dashboard.metadata.name}.${dashboard.metadata.namespace}.svc.cluster.local`);
      assert.equal(Number(url.port), (dashboard.spec as { ports: { port: number }[] }).ports[0].port);
      assert.equal(url.pathname, '/queue-depth');
      assert.deepEqual(containersOf(find(objects, 'Deployment', 'scriptorium-dashboard'))[0].args, ['dashboard', '--host', '0.0.0.0', '--port', '3000']);
    });

    test('KEDA reading /queue-depth scales from zero to N with the work and back to zero once it drains', () => {
      const scaled = find(objects, 'ScaledObject', 'scriptorium-worker');
      const target = Number((scaled.spec as { triggers: { metadata: Record<string, string> }[] }).triggers[0].metadata.targetValue);
      const max = (scaled.spec as { maxReplicaCount: number }).maxReplicaCount;
      const body = (pending: number, active: number) => ({ v1: depth(0, 0), v2: depth(0, 0), v3: depth(pending, active) });
      assert.equal(kedaReplicas(scaled, body(0, 0)), 0);
      assert.equal(kedaReplicas(scaled, body(1, 0)), 1);
      assert.equal(kedaReplicas(scaled, body(3 * target, 0)), 3);
      assert.equal(kedaReplicas(scaled, body(1000 * target, 0)), max);
      // Pages still being read keep their workers.
      assert.equal(kedaReplicas(scaled, body(2 * target, 2 * target)), 2);
      assert.equal(kedaReplicas(scaled, body(0, 0)), 0);
    });
  });
}

test('the GPU overlay asks for a GPU per worker and the CPU overlay for none', () => {
  assert.equal(workerContainer(overlay('gpu')).resources?.limits?.['nvidia.com/gpu'], '1');
  assert.equal(workerContainer(overlay('cpu')).resources?.limits?.['nvidia.com/gpu'], undefined);
});

/** The `--device` a worker's arguments give, and the driver capabilities its container asks the NVIDIA runtime for. */
function deviceAndCapabilities(container: { args?: string[]; command?: string[]; env?: unknown }): { device?: string; capabilities: string[] } {
  const args = container.args ?? container.command ?? [];
  const at = args.indexOf('--device');
  const env = container.env ?? [];
  const value = Array.isArray(env)
    ? (env as { name: string; value?: string }[]).find((variable) => variable.name === 'NVIDIA_DRIVER_CAPABILITIES')?.value
    : (env as Record<string, string>).NVIDIA_DRIVER_CAPABILITIES;
  return { device: at === -1 ? undefined : args[at + 1], capabilities: value === undefined ? [] : value.split(',') };
}

test("GPU workers decode on the GPU and have the NVIDIA runtime mount the driver's Vulkan files (graphics)", () => {
  const [compose] = readYamlDocuments(path.join(ROOT, 'docker-compose.yml')) as { services: Record<string, { command?: string[]; environment?: Record<string, string> }> }[];
  const gpuWorkers = {
    'the Kubernetes gpu overlay': workerContainer(overlay('gpu')),
    "compose's gpu-worker": { command: compose.services['gpu-worker'].command, env: compose.services['gpu-worker'].environment },
  };
  for (const [where, container] of Object.entries(gpuWorkers)) {
    const { device, capabilities } = deviceAndCapabilities(container);
    assert.equal(device, 'gpu', where);
    for (const capability of ['compute', 'utility', 'graphics']) assert.ok(capabilities.includes(capability), `${where}: NVIDIA_DRIVER_CAPABILITIES lacks ${capability}`);
  }
  assert.deepEqual(deviceAndCapabilities(workerContainer(overlay('cpu'))), { device: undefined, capabilities: [] });
});

/** Whether `version` (major.minor.patch) satisfies an npm engines range made of `>=`, `<`, `||` and spaces. */
function satisfies(version: string, range: string): boolean {
  const numbers = (text: string) => text.split('.').map(Number).concat(0, 0, 0).slice(0, 3);
  const compare = (a: number[], b: number[]) => a.map((part, i) => part - b[i]).find((difference) => difference !== 0) ?? 0;
  const actual = numbers(version);
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const match = /^(>=|<)(\d+(?:\.\d+){0,2})$/.exec(comparator);
        assert.ok(match, `engines comparator "${comparator}" is not one this check reads`);
        const difference = compare(actual, numbers(match[2]));
        return match[1] === '>=' ? difference >= 0 : difference < 0;
      }),
  );
}

test(`the images are built on Node.js ${IMAGE_NODE_MAJOR} (LTS, Debian bookworm), a Node the code supports`, () => {
  const stages = [...readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)].map(([, image, stage]) => ({ image, stage }));
  assert.deepEqual(
    stages.map(({ stage }) => stage),
    ['build', 'runtime'],
  );
  for (const { image, stage } of stages) {
    const tag = /^node:(\d+)-bookworm(-slim)?$/.exec(image);
    assert.ok(tag, `${stage}: ${image} is no node:<major>-bookworm[-slim] image`);
    assert.equal(Number(tag[1]), IMAGE_NODE_MAJOR, `${stage}: ${image}`);
    assert.equal(tag[2] !== undefined, stage === 'runtime', `${stage}: only the runtime image is slim`);
  }
  const { engines } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.ok(satisfies(`${IMAGE_NODE_MAJOR}.0.0`, engines.node), `package.json engines "${engines.node}" refuses Node ${IMAGE_NODE_MAJOR}`);
  assert.ok(satisfies(process.versions.node, engines.node), `package.json engines "${engines.node}" refuses this Node, ${process.versions.node}`);
  // Every Scriptorium container is that image: compose builds it, the manifests name it.
  const [compose] = readYamlDocuments(path.join(ROOT, 'docker-compose.yml')) as { services: Record<string, { image?: string; build?: string }> }[];
  for (const [name, service] of Object.entries(compose.services).filter(([, service]) => service.image === 'scriptorium:local')) {
    assert.equal(service.build, '.', `compose service ${name} is built from the Dockerfile`);
  }
  for (const name of OVERLAYS) {
    for (const object of overlay(name)) {
      for (const container of containersOf(object)) {
        if (!object.metadata.name.startsWith('scriptorium-redis')) assert.match(String(container.image), /scriptorium/, `${object.metadata.name}: the Scriptorium image`);
      }
    }
  }
});

test('the serve component validates: a Deployment, its Service and a PodDisruptionBudget', () => {
  const objects = kustomize(path.join(ROOT, 'deploy/kubernetes/components/serve'));
  assert.deepEqual(objects.map((object) => object.kind), ['Deployment', 'Service', 'PodDisruptionBudget']);
  for (const object of objects) new MODELS[`${object.apiVersion}/${object.kind}`](object as never).validate();
});

/** The CPU overlay with one component added, resolved, as an operator's own kustomization.yaml would. */
function cpuOverlayWith(componentName: string): K8sObject[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'scriptorium-kustomize-'));
  try {
    const cpu = path.relative(dir, path.join(ROOT, 'deploy/kubernetes/overlays/cpu'));
    const component = path.relative(dir, path.join(ROOT, 'deploy/kubernetes/components', componentName));
    const kustomization = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', `  - ${cpu}`, 'components:', `  - ${component}`];
    writeFileSync(path.join(dir, 'kustomization.yaml'), `${kustomization.join('\n')}\n`);
    return kustomize(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the arm64-workers component keeps worker pods on arm64 nodes, tainted pools included, and nothing else', () => {
  const objects = cpuOverlayWith('arm64-workers');
  const worker = find(objects, 'Deployment', 'scriptorium-worker');
  new Deployment(worker as never).validate();
  type Toleration = { key: string; operator: string; value: string; effect: string };
  const pod = (worker.spec as { template: { spec: { nodeSelector: Record<string, string>; tolerations: Toleration[] } } }).template.spec;
  assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/arch': 'arm64' });
  assert.deepEqual(pod.tolerations, [{ key: 'kubernetes.io/arch', operator: 'Equal', value: 'arm64', effect: 'NoSchedule' }]);
  const others = objects.filter((object) => object !== worker);
  assert.deepEqual(others, overlay('cpu').filter((object) => !(object.kind === 'Deployment' && object.metadata.name === 'scriptorium-worker')));
});

test('the node-shared-weights component puts the checkpoint and the packed weights in host folders the worker owns', () => {
  const objects = cpuOverlayWith('node-shared-weights');
  const worker = find(objects, 'Deployment', 'scriptorium-worker');
  new Deployment(worker as never).validate();
  type Volume = { name: string; hostPath?: { path: string }; emptyDir?: unknown };
  type Mount = { name: string; mountPath: string };
  const pod = (worker.spec as { template: { spec: { volumes: Volume[]; securityContext: { runAsUser: number }; initContainers: (Container & { command: string[]; volumeMounts: Mount[] })[] } } }).template.spec;
  for (const name of ['models', 'packed-weights']) {
    const volume = pod.volumes.find((v) => v.name === name);
    assert.ok(volume?.hostPath !== undefined && volume.emptyDir === undefined, `${name} is a host folder only`);
  }
  const container = workerContainer(objects) as Container & { volumeMounts: Mount[] };
  const packedDir = container.env?.find((variable) => variable.name === PACKED_WEIGHTS_DIR_VARIABLE)?.value;
  assert.equal(packedDir, container.volumeMounts.find((mount) => mount.name === 'packed-weights')?.mountPath);
  const [owner] = pod.initContainers;
  assert.equal(owner.command[1], `${pod.securityContext.runAsUser}:${pod.securityContext.runAsUser}`);
  for (const mount of owner.volumeMounts) assert.ok(owner.command.includes(mount.mountPath), `${mount.mountPath} is given to the worker's user`);
});

describe('docker-compose.yml', () => {
  const [compose] = readYamlDocuments(path.join(ROOT, 'docker-compose.yml')) as { services: Record<string, Record<string, unknown>> }[];

  test('workers have a CPU limit, no --threads, and a healthcheck on /healthz and /readyz of their metrics port', () => {
    const worker = compose.services.worker;
    const command = worker.command as string[];
    assert.ok(!command.includes('--threads'));
    const port = command[command.indexOf('--metrics-port') + 1];
    assert.match(String(worker.cpus), /WORKER_CPUS/);
    const check = (worker.healthcheck as { test: string[] }).test.join(' ');
    assert.match(check, new RegExp(`127\\.0\\.0\\.1:${port}/`));
    assert.match(check, /healthz/);
    assert.match(check, /readyz/);
  });

  test("a worker's stop grace period outlasts a page's deadline and hang grace", () => {
    const minutes = Number(/^(\d+)m$/.exec(String(compose.services.worker.stop_grace_period))?.[1]);
    assert.ok(minutes * 60 > (DEFAULT_PAGE_TIMEOUT_MS + DEFAULT_HANG_GRACE_MS) / 1000, `${minutes} min`);
  });

  test('the dashboard has a healthcheck on its /healthz', () => {
    assert.match((compose.services.dashboard.healthcheck as { test: string[] }).test.join(' '), /127\.0\.0\.1:3000\/healthz/);
  });
});
