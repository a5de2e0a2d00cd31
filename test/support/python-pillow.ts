// Runs small Python programs against the real Pillow, for tests that compare our image code with it bit for bit.
// Tests skip those comparisons when no Python with Pillow is installed (Debian: apt-get install python3-pil).
import { spawnSync } from 'node:child_process';

/** `python3` on PATH first; Debian's interpreter second, as python3-pil installs there when PATH has another. */
const CANDIDATES = ['python3', '/usr/bin/python3'];

function findPythonWithPillow(): string | undefined {
  for (const python of CANDIDATES) {
    const probe = spawnSync(python, ['-c', 'import PIL'], { stdio: 'ignore' });
    if (probe.status === 0) return python;
  }
  return undefined;
}

/** A Python interpreter that imports PIL, or undefined. */
export const pythonWithPillow = findPythonWithPillow();

/** Why a Pillow comparison is skipped, for `test(name, { skip }, …)`; false when Pillow is available. */
export const skipWithoutPillow: string | false = pythonWithPillow ? false : 'no python3 with Pillow (apt-get install python3-pil)';

/** A Python interpreter at all (for checks that need CPython but not Pillow). */
export const python = CANDIDATES.find((candidate) => spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0);

/** Runs `program` with `args`, feeding `input` on stdin; returns stdout. Throws with stderr on failure. */
export function runPython(interpreter: string, program: string, args: (string | number)[], input?: Uint8Array): Buffer {
  const result = spawnSync(interpreter, ['-c', program, ...args.map(String)], {
    input,
    maxBuffer: 1 << 30,
  });
  if (result.status !== 0) throw new Error(`python failed (${result.status}): ${result.stderr?.toString()}`);
  return result.stdout;
}
