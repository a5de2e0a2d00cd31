// `scriptorium model synth`: checkpoints in the exact Hugging Face layout with random weights.
// `scriptorium model download`: the real checkpoints from the Hugging Face hub.
// `scriptorium model check`: whether a worker would load a checkpoint, without reading its weights.
import { DEFAULT_HUB_ENDPOINT, downloadModel, HUB_REPOSITORIES, type ModelDownloadEvent } from '../model/model-download.js';
import { synthCheckpoint, type WeightDType } from '../model/synth/synth-checkpoint.js';
import { SYNTHETIC_MARKER_FILE } from '../model/synth/synthetic-marker.js';
import { VARIANTS } from '../vocabulary/ocr-vocabulary.js';
import { checkCheckpoint } from '../model/checkpoint-check.js';
import { formatCheckpointReport } from '../model/checkpoint-report-text.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { checkedChoice, choice, flag, httpUrl, integer, text } from './options.js';
import { commandGroup, UsageError } from './usage.js';

const SYNTH_USAGE = `Usage: scriptorium model synth --variant v1|v2|v3 --size tiny|wide|full --out DIR [--seed N]
                             [--dtype bf16|f16|f32] [--position-ids]

Writes config.json, safetensors shards with model.safetensors.index.json (real tensor names,
shapes and BF16 dtype; random values), the tokenizer files and ${SYNTHETIC_MARKER_FILE}, which
flags the folder as synthetic in every command's logs and results. "tiny" shrinks every width for
tests; "wide" keeps the real decoder widths and vocabulary over two layers and eight experts (about
0.8 GB, an embedding and head larger than some GPUs bind); "full" matches the real parameter count
(about 6.7 GB on disk).

  --dtype T        store every weight as bf16 (default, as published), f32 (the same values,
                   widened) or f16 (rounded to nearest even), as re-saved copies do
  --position-ids   add the int64 CLIP position_ids buffer re-saved copies carry (v1, v3)`;

const DOWNLOAD_USAGE = `Usage: scriptorium model download v1|v2|v3 --dir DIR [--revision REV] [--endpoint URL]

Downloads a checkpoint from the Hugging Face hub into DIR: config.json, the safetensors shards and
index, tokenizer.json, tokenizer_config.json and special_tokens_map.json (not the Python code or
images). v1 = ${HUB_REPOSITORIES.v1}, v2 = ${HUB_REPOSITORIES.v2}, v3 = ${HUB_REPOSITORIES.v3}.

  --revision REV   branch, tag or commit (default main)
  --endpoint URL   hub or mirror (default $HF_ENDPOINT, else ${DEFAULT_HUB_ENDPOINT})

$HF_TOKEN, when set, is sent to the hub as a Bearer token (private or gated repositories).
Files already present with the listed size and hash are skipped; an interrupted download resumes
from DIR/FILE.partial; every file is checked against the sha256 (or git blob id) the hub lists.`;

const CHECK_USAGE = `Usage: scriptorium model check DIR|s3://bucket/prefix/ [--variant v1|v2|v3] [--json] [--no-identity]

Reads config.json, the index, every shard header and the tokenizer files, never the weights, and
reports the variant, parameter count, dtypes, missing / mis-shaped / ignored tensors, the memory F16
and F32 weights cost, whether tokenizer.json has DeepSeek-OCR's vocabulary, and the checkpoint
identity workers record (hashing the local files; from SHA256SUMS for s3://). Exit status 0 when a
worker would load the checkpoint, 1 when it would refuse it (workers run the same check at start).

  --json         the report as JSON
  --no-identity  skip the identity (hashing a full local checkpoint takes seconds)`;

const DOWNLOAD_OPTIONS = {
  dir: text().required(),
  revision: text().default('main'),
  endpoint: httpUrl().orEnv('HF_ENDPOINT').default(DEFAULT_HUB_ENDPOINT),
};

const downloadCommand = defineCommand({
  usage: DOWNLOAD_USAGE,
  options: DOWNLOAD_OPTIONS,
  positionals: { name: 'model (v1, v2 or v3)', min: 1, max: 1 },
  run: runDownload,
});

async function runDownload({ options: values, positionals }: CommandLine<typeof DOWNLOAD_OPTIONS>): Promise<number> {
  const variant = checkedChoice(positionals[0], 'the model', VARIANTS);
  const { dir, endpoint } = values;
  const repo = HUB_REPOSITORIES[variant];
  const summary = await downloadModel({
    repo,
    dir,
    revision: values.revision,
    endpoint,
    token: process.env.HF_TOKEN?.trim() || undefined,
    onEvent: downloadReporter(),
  });
  process.stdout.write(
    `downloaded ${repo} at commit ${summary.commit} into ${dir}: ${summary.downloaded.length} files fetched ` +
      `(${formatBytes(summary.bytesTransferred)} received), ${summary.skipped.length} already present\n`,
  );
  return 0;
}

/** stderr: a line per finished file and per retry; on a terminal also a live progress line. */
function downloadReporter(): (event: ModelDownloadEvent) => void {
  const live = process.stderr.isTTY;
  let lastDraw = 0;
  let startedAt = 0;
  let startOffset = 0;
  const line = (text: string) => process.stderr.write(`${live ? '\r\x1b[K' : ''}${text}\n`);
  return (event) => {
    switch (event.type) {
      case 'listed':
        line(`commit ${event.commit}: ${event.files} files, ${formatBytes(event.bytes)}`);
        break;
      case 'skipped':
        line(`present    ${event.file} (${formatBytes(event.bytes)}, verified)`);
        break;
      case 'started':
        startedAt = Date.now();
        startOffset = event.offset;
        if (event.offset > 0) line(`resuming   ${event.file} at ${formatBytes(event.offset)}`);
        break;
      case 'progress':
        if (live && Date.now() - lastDraw > 200) {
          lastDraw = Date.now();
          const seconds = Math.max((Date.now() - startedAt) / 1000, 0.001);
          const rate = formatBytes((event.bytes - startOffset) / seconds);
          const total = event.size === undefined ? '' : ` / ${formatBytes(event.size)} (${Math.floor((100 * event.bytes) / Math.max(event.size, 1))}%)`;
          process.stderr.write(`\r\x1b[K${event.file}  ${formatBytes(event.bytes)}${total}  ${rate}/s`);
        }
        break;
      case 'retrying':
        line(`retrying   ${event.subject} in ${(event.delayMs / 1000).toFixed(1)} s: ${event.reason}`);
        break;
      case 'downloaded':
        line(`downloaded ${event.file} (${formatBytes(event.bytes)})`);
        break;
    }
  };
}

function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(1)} kB`;
  return `${Math.round(bytes)} B`;
}

const SYNTH_OPTIONS = {
  variant: choice(VARIANTS).required(),
  size: choice(['tiny', 'wide', 'full'] as const).required(),
  out: text().required(),
  seed: integer({ min: 0 }).default(0),
  dtype: choice(['bf16', 'f16', 'f32'] as const).default('bf16'),
  'position-ids': flag(),
};

const synthCommand = defineCommand({ usage: SYNTH_USAGE, options: SYNTH_OPTIONS, run: runSynth });

async function runSynth({ options: values }: CommandLine<typeof SYNTH_OPTIONS>): Promise<number> {
  const { variant, size, out: outDir, seed } = values;
  const dtype = values.dtype.toUpperCase() as WeightDType;
  if (values['position-ids'] && variant === 'v2') throw new UsageError('--position-ids belongs to the CLIP encoder of v1 and v3');
  const started = Date.now();
  let lastReport = 0;
  const summary = await synthCheckpoint({
    variant,
    size,
    outDir,
    seed,
    dtypeOf: () => dtype,
    positionIds: values['position-ids'],
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

const CHECK_OPTIONS = { variant: choice(VARIANTS), json: flag(), 'no-identity': flag() };

const checkCommand = defineCommand({
  usage: CHECK_USAGE,
  options: CHECK_OPTIONS,
  positionals: { name: 'checkpoint folder or s3:// prefix', min: 1, max: 1 },
  run: runCheck,
});

async function runCheck({ options: values, positionals: [location] }: CommandLine<typeof CHECK_OPTIONS>): Promise<number> {
  const { variant } = values;
  const report = await checkCheckpoint(location, { variant, identity: !values['no-identity'] });
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatCheckpointReport(report)}\n`);
  return report.loadable ? 0 : 1;
}

export const modelCommands = commandGroup('model command', { synth: synthCommand, download: downloadCommand, check: checkCommand });
