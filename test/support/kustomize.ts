// A small kustomize for the manifest tests (no kustomize binary, no network): resolves the subset of
// kustomization.yaml that deploy/kubernetes/ uses, so that what an overlay deploys can be validated.
// - resources: files (every YAML document) or folders with a kustomization.yaml; components: folders
//   whose resources are added and whose patches apply to everything gathered before them
// - patches: `path:` strategic-merge patches, applied to the resource of the same kind and name;
//   maps merge, lists whose items all have a `name` merge item by item on it (containers, env,
//   volumes), other lists are replaced, and null deletes a key
// - namespace (set on every object but Namespaces), labels[].pairs (added to metadata.labels),
//   images (name → newName:newTag in containers)
// Anything else in a kustomization is an error, so that a manifest never silently uses a feature
// this resolver would get wrong.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { parseAllDocuments } from 'yaml';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<string, unknown>;

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'labels', 'resources', 'components', 'patches', 'images']);

interface Kustomization {
  apiVersion: string;
  kind: 'Kustomization' | 'Component';
  namespace?: string;
  labels?: { pairs: Record<string, string> }[];
  resources?: string[];
  components?: string[];
  patches?: { path: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

/** Every YAML document of a file, as parsed objects. */
export function readYamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0].message}`);
    return document.toJSON() as unknown;
  });
}

/** The objects the kustomization in `dir` produces, in order. */
export function kustomize(dir: string): K8sObject[] {
  const [kustomization] = readYamlDocuments(path.join(dir, 'kustomization.yaml')) as Kustomization[];
  const unknown = Object.keys(kustomization).filter((field) => !KNOWN_FIELDS.has(field));
  if (unknown.length > 0) throw new Error(`${dir}/kustomization.yaml: this resolver does not support ${unknown.join(', ')}`);

  const objects: K8sObject[] = [];
  for (const entry of kustomization.resources ?? []) {
    const target = path.join(dir, entry);
    objects.push(...(statSync(target).isDirectory() ? kustomize(target) : (readYamlDocuments(target) as K8sObject[])));
  }
  // A component adds its resources and patches what has been gathered so far, its own resources included.
  for (const entry of kustomization.components ?? []) {
    const componentDir = path.join(dir, entry);
    const [component] = readYamlDocuments(path.join(componentDir, 'kustomization.yaml')) as Kustomization[];
    for (const resource of component.resources ?? []) objects.push(...(readYamlDocuments(path.join(componentDir, resource)) as K8sObject[]));
    applyPatches(objects, componentDir, component);
  }
  applyPatches(objects, dir, kustomization);
  return objects.map((object) => transform(object, kustomization));
}

/** Applies the kustomization's patches (paths relative to `dir`) to `objects` in place. */
function applyPatches(objects: K8sObject[], dir: string, kustomization: Kustomization): void {
  for (const { path: patchFile } of kustomization.patches ?? []) {
    for (const patch of readYamlDocuments(path.join(dir, patchFile)) as K8sObject[]) {
      const index = objects.findIndex((object) => object.kind === patch.kind && object.metadata.name === patch.metadata.name);
      if (index === -1) throw new Error(`${dir}/${patchFile}: no ${patch.kind} ${patch.metadata.name} to patch`);
      objects[index] = strategicMerge(objects[index], patch) as K8sObject;
    }
  }
}

function transform(object: K8sObject, kustomization: Kustomization): K8sObject {
  const result = structuredClone(object);
  if (kustomization.namespace !== undefined && result.kind !== 'Namespace') result.metadata.namespace = kustomization.namespace;
  for (const { pairs } of kustomization.labels ?? []) result.metadata.labels = { ...result.metadata.labels, ...pairs };
  for (const image of kustomization.images ?? []) {
    for (const container of containersOf(result)) {
      if (container.image === image.name) container.image = `${image.newName ?? image.name}${image.newTag === undefined ? '' : `:${image.newTag}`}`;
    }
  }
  return result;
}

/** The containers of a workload's pod template (Deployment, StatefulSet), or none. */
export function containersOf(object: K8sObject): Array<Record<string, unknown>> {
  const spec = object.spec as { template?: { spec?: { containers?: Array<Record<string, unknown>> } } } | undefined;
  return spec?.template?.spec?.containers ?? [];
}

/** `patch` merged into `base` (see the header); neither is modified. */
export function strategicMerge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(base) && Array.isArray(patch)) {
    const byName = (items: unknown[]) => items.every((item) => isMap(item) && typeof item.name === 'string');
    if (!byName(base) || !byName(patch)) return structuredClone(patch);
    const merged = base.map((item) => structuredClone(item) as Record<string, unknown>);
    for (const item of patch as Record<string, unknown>[]) {
      const index = merged.findIndex((existing) => existing.name === item.name);
      if (index === -1) merged.push(structuredClone(item));
      else merged[index] = strategicMerge(merged[index], item) as Record<string, unknown>;
    }
    return merged;
  }
  if (isMap(base) && isMap(patch)) {
    const merged: Record<string, unknown> = structuredClone(base);
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete merged[key];
      else merged[key] = key in merged ? strategicMerge(merged[key], value) : structuredClone(value);
    }
    return merged;
  }
  return structuredClone(patch);
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
