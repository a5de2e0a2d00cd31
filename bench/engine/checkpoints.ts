// Synthetic checkpoints for the benchmark, kept outside the repository in one directory
// (<models>/v1, v2, v3 at full size; v1-tiny, ... for checking the harness itself) and reused by
// later runs. Synthetic values depend only on the seed and the tensor name, and V3 has exactly V1's
// tensors, so V3's directory links V1's files and adds its own config.json: the same bytes
// synthesis would write, without another 6.7 GB.
import { access, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { parseModelConfig } from '../../src/engine/model-config.js';
import { modelConfig, type ModelSize } from '../../src/model/synth/model-configs.js';
import { synthCheckpoint } from '../../src/model/synth/synth-checkpoint.js';
import { tensorManifest } from '../../src/model/synth/tensor-manifest.js';
import { parseVisionDims } from '../../src/engine/vision-config.js';

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** The engine's view of a config.json: variant, decoder and vision dimensions. */
function dimensions(raw: Record<string, unknown>) {
  const config = parseModelConfig(raw);
  return { variant: config.variant, decoder: config.decoder, vision: parseVisionDims(config) };
}

/** Throws unless `dir` holds a checkpoint with the dimensions of `variant` at `size` (synthetic or real). */
async function checkDimensions(dir: string, variant: Variant, size: ModelSize): Promise<void> {
  const file = path.join(dir, 'config.json');
  let found: ReturnType<typeof dimensions>;
  try {
    found = dimensions(JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>);
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}; remove ${dir} to have it generated again`);
  }
  if (!isDeepStrictEqual(found, dimensions(modelConfig(variant, size) as unknown as Record<string, unknown>))) {
    throw new Error(`${dir} does not hold a ${size} ${variant} checkpoint; remove it to have it generated again, or pass another --models`);
  }
}

/** V3's directory from V1's: V1's files linked, V3's config.json written. */
async function linkV3(v1Dir: string, outDir: string, size: ModelSize): Promise<void> {
  await mkdir(outDir, { recursive: true });
  for (const name of await readdir(v1Dir)) {
    if (name !== 'config.json') await symlink(path.resolve(v1Dir, name), path.join(outDir, name));
  }
  await writeFile(path.join(outDir, 'config.json'), JSON.stringify(modelConfig('v3', size), null, 2));
}

/**
 * The directory of the `variant` checkpoint at `size` under `modelsDir`, generated first when absent
 * (full size: 20–60 s and 6.7 GB per variant; V3 links V1's). Generation writes beside the final
 * directory and renames it into place, so an interrupted run leaves nothing half-written.
 */
export async function benchCheckpoint(
  modelsDir: string,
  variant: Variant,
  size: ModelSize,
  progress: (line: string) => void,
): Promise<string> {
  const dir = path.join(modelsDir, size === 'full' ? variant : `${variant}-${size}`);
  if (await exists(path.join(dir, 'config.json'))) {
    await checkDimensions(dir, variant, size);
    return dir;
  }
  const partial = `${dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  const v3SharesV1 = isDeepStrictEqual(tensorManifest(modelConfig('v1', size)), tensorManifest(modelConfig('v3', size)));
  if (variant === 'v3' && v3SharesV1) {
    const v1Dir = await benchCheckpoint(modelsDir, 'v1', size, progress);
    progress(`linking the ${size} v3 checkpoint to v1's tensors in ${dir}`);
    await linkV3(v1Dir, partial, size);
  } else {
    progress(`writing a ${size} synthetic ${variant} checkpoint to ${dir}${size === 'full' ? ' (about 6.7 GB)' : ''}`);
    let reported = 0;
    await synthCheckpoint({
      variant,
      size,
      outDir: partial,
      onProgress: (done, total) => {
        if (done - reported >= total / 10 || done === total) {
          reported = done;
          progress(`  ${variant}: ${(done / 1e9).toFixed(1)} / ${(total / 1e9).toFixed(1)} GB`);
        }
      },
    });
  }
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
  return dir;
}
