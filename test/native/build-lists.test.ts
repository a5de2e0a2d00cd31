// binding.gyp and native/sources.gypi agree: for each architecture, the addon builds a static library
// for every kernel set sources.gypi lists (from that set's sources, with that set's flags) and links
// each into the CPU backend, so a set added to the one source list cannot be left out of `npm ci`'s
// build while the native test scripts, which read sources.gypi alone, still test it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

interface GypTarget {
  target_name: string;
  sources?: string[];
  cflags_cc?: string[];
  xcode_settings?: { OTHER_CPLUSPLUSFLAGS?: string[] };
  conditions?: [string, { dependencies?: string[]; targets?: GypTarget[] }][];
}

/** A gyp file is a Python literal (comments, single quotes): read it as Python does. */
function readGyp(file: string): Record<string, unknown> {
  const json = execFileSync('python3', ['-c', 'import ast, json, sys; print(json.dumps(ast.literal_eval(open(sys.argv[1]).read())))', path.join(ROOT, file)]);
  return JSON.parse(json.toString()) as Record<string, unknown>;
}

const variables = (readGyp('native/sources.gypi') as { variables: Record<string, string[]> }).variables;
const binding = readGyp('binding.gyp') as { conditions: [string, { targets: GypTarget[] }][]; targets: GypTarget[] };

for (const arch of ['x64', 'arm64']) {
  test(`binding.gyp builds and links every ${arch} kernel set of sources.gypi, with its sources and flags`, () => {
    const sets = variables[`kernels_${arch}_sets`];
    assert.ok(sets.length > 0, `sources.gypi lists ${arch} sets`);
    const condition = `target_arch=='${arch}'`;
    const archTargets = binding.conditions.find(([when]) => when === condition)?.[1].targets ?? [];
    assert.deepEqual(
      archTargets.map((target) => target.target_name),
      sets.map((set) => `kernels_${set}`),
    );
    for (const set of sets) {
      const target = archTargets.find((candidate) => candidate.target_name === `kernels_${set}`)!;
      assert.deepEqual(target.sources, [`<@(kernels_${set}_sources)`]);
      assert.deepEqual(target.cflags_cc, [`<@(kernels_${set}_flags)`]);
      assert.deepEqual(target.xcode_settings?.OTHER_CPLUSPLUSFLAGS, [`<@(kernels_${set}_flags)`]);
      assert.ok(Array.isArray(variables[`kernels_${set}_sources`]) && Array.isArray(variables[`kernels_${set}_flags`]), `sources.gypi defines kernels_${set}_sources and _flags`);
    }
    const cpu = binding.targets.find((target) => target.target_name === 'scriptorium_cpu')!;
    const linked = cpu.conditions?.find(([when]) => when === condition)?.[1].dependencies;
    assert.deepEqual(linked, sets.map((set) => `kernels_${set}`));
  });
}
