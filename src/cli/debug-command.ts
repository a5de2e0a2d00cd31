// `scriptorium debug dump`: tensors for comparing the engine with an outside implementation.
import { readFile } from 'node:fs/promises';

import { debugDump, writeDump } from '../engine/debug-dump.js';
import { VARIANTS, type Variant } from '../engine/model-config.js';
import { choiceOption, integerOption, parseCommandArgs, requireOption, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium debug dump --model DIR --prompt TEXT [--steps N] [--force-ids FILE.json]
                             [--variant v1|v2|v3] [--threads T] --out FILE.safetensors

Writes input_ids, prefill_logits, generated_ids, step_topk_ids and step_topk_logits (README, "Debugging").`;

async function readForceIds(file: string): Promise<number[]> {
  const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((id) => Number.isInteger(id) && id >= 0)) {
    throw new Error(`--force-ids ${file} must hold a non-empty JSON array of token ids`);
  }
  return parsed as number[];
}

export async function runDebugCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'dump') throw new UsageError(sub ? `unknown debug command "${sub}"` : 'missing debug command', USAGE);
  const { values } = parseCommandArgs(
    rest,
    {
      model: { type: 'string' },
      prompt: { type: 'string' },
      steps: { type: 'string' },
      'force-ids': { type: 'string' },
      variant: { type: 'string' },
      threads: { type: 'string' },
      out: { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const out = requireOption(values.out, 'out', USAGE);
  const dump = await debugDump({
    modelDir: requireOption(values.model, 'model', USAGE),
    prompt: requireOption(values.prompt, 'prompt', USAGE),
    steps: integerOption(values.steps, 'steps', 32, USAGE, 1),
    forceIds: values['force-ids'] ? await readForceIds(values['force-ids']) : undefined,
    variant: values.variant === undefined ? undefined : choiceOption<Variant>(values.variant, 'variant', VARIANTS, USAGE),
    threads: values.threads === undefined ? undefined : integerOption(values.threads, 'threads', 1, USAGE, 1),
  });
  await writeDump(out, dump);
  const shapes = Object.entries(dump.tensors)
    .map(([name, t]) => `${name} ${t.dtype}[${t.shape.join(',')}]`)
    .join(', ');
  process.stdout.write(`wrote ${out}: ${shapes}\n`);
  return 0;
}
