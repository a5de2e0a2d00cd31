// `scriptorium model synth`: checkpoints in the exact Hugging Face layout with random weights.
import { synthCheckpoint } from '../engine/synth/synth-checkpoint.js';
import { VARIANTS } from '../engine/model-config.js';
import { choiceOption, integerOption, parseCommandArgs, requireOption, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium model synth --variant v1|v2|v3 --size tiny|full --out DIR [--seed N]

Writes config.json, safetensors shards with model.safetensors.index.json (real tensor names,
shapes and BF16 dtype; random values) and the tokenizer files. "tiny" shrinks every width for
tests; "full" matches the real parameter count (about 6.7 GB on disk).`;

export async function runModelCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'synth') throw new UsageError(sub ? `unknown model command "${sub}"` : 'missing model command', USAGE);
  const { values } = parseCommandArgs(
    rest,
    { variant: { type: 'string' }, size: { type: 'string' }, out: { type: 'string' }, seed: { type: 'string' } },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const variant = choiceOption(values.variant, 'variant', VARIANTS, USAGE);
  const size = choiceOption(values.size, 'size', ['tiny', 'full'] as const, USAGE);
  const outDir = requireOption(values.out, 'out', USAGE);
  const seed = integerOption(values.seed, 'seed', 0, USAGE);
  const started = Date.now();
  let lastReport = 0;
  const summary = await synthCheckpoint({
    variant,
    size,
    outDir,
    seed,
    onProgress: (done, total) => {
      if (process.stderr.isTTY && Date.now() - lastReport > 500) {
        lastReport = Date.now();
        process.stderr.write(`\rwriting ${(done / 1e9).toFixed(2)} / ${(total / 1e9).toFixed(2)} GB`);
      }
    },
  });
  if (process.stderr.isTTY) process.stderr.write('\n');
  process.stdout.write(
    `wrote synthetic ${variant} ${size} checkpoint to ${outDir}: ${summary.tensors} tensors, ` +
      `${summary.parameters.toLocaleString('en-US')} parameters, ${(summary.bytes / 1e6).toFixed(1)} MB ` +
      `in ${((Date.now() - started) / 1000).toFixed(1)} s (random weights: output text is meaningless)\n`,
  );
  return 0;
}
