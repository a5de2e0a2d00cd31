// Which checkpoint a command runs: --model, else $SCRIPTORIUM_MODEL, else a tiny synthetic
// checkpoint generated once into the user's cache directory. A checkpoint is synthetic when it holds
// the marker `model synth` writes, wherever it comes from, and is announced as such. A model named
// s3://bucket/prefix/ is fetched into a local cache first (see mirrorVerified: checked against the
// prefix's SHA256SUMS, nothing fetched again that is already there and verified).
import { access, readdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import type { Logger } from 'pino';

import { synthCheckpoint } from './synth/synth-checkpoint.js';
import { isSyntheticCheckpoint } from './synth/synthetic-marker.js';
import { checkCheckpoint } from './checkpoint-check.js';
import { formatCheckpointReport } from './checkpoint-report-text.js';
import { S3Storage } from '../storage/s3-storage.js';
import { mirrorVerified, type MirrorEvent } from '../storage/verified-mirror.js';

export interface ResolvedModel {
  dir: string;
  synthetic: boolean;
}

export interface ResolveModelOptions {
  /** Where s3:// models are kept, as <cache>/<bucket>/<prefix>/. Default: ~/.cache/scriptorium/models. */
  cacheDir?: string;
  /** Where the checkpoint check's summary goes (default: a line on stderr when F16/F32 weights cost memory). */
  logger?: Logger;
}

/** A checkpoint a worker would refuse; the message is the `model check` report. */
export class CheckpointRefusedError extends Error {
  override name = 'CheckpointRefusedError';
}

function cacheRoot(): string {
  return process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
}

export function defaultModelCacheDir(): string {
  return path.join(cacheRoot(), 'scriptorium', 'models');
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

export async function resolveModelDir(flag: string | undefined, options: ResolveModelOptions = {}): Promise<ResolvedModel> {
  const named = flag ?? process.env.SCRIPTORIUM_MODEL;
  if (named) {
    const dir = named.startsWith('s3://') ? await fetchS3Model(named, options.cacheDir ?? defaultModelCacheDir()) : await localModelDir(named, flag === undefined);
    const synthetic = await isSyntheticCheckpoint(dir);
    if (synthetic) {
      process.stderr.write(`scriptorium: ${named} is a SYNTHETIC checkpoint written by \`model synth\` (random weights); its output is meaningless text\n`);
    }
    await checkBeforeLoading(dir, options.logger);
    return { dir, synthetic };
  }
  const dir = path.join(cacheRoot(), 'scriptorium', 'synthetic-tiny-v3');
  // A cache written before checkpoints carried their synthetic marker is written again.
  if (!(await isSyntheticCheckpoint(dir)) || !(await exists(path.join(dir, 'config.json')))) {
    // Written beside and renamed, so an interrupted run never leaves a half checkpoint.
    const partial = `${dir}.partial-${process.pid}`;
    await synthCheckpoint({ variant: 'v3', size: 'tiny', outDir: partial, seed: 0 });
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  }
  process.stderr.write(
    `scriptorium: no model given (--model or SCRIPTORIUM_MODEL): using a SYNTHETIC tiny V3 checkpoint with random weights at ${dir}; its output is meaningless text\n`,
  );
  return { dir, synthetic: true };
}

/** The `model check` of a checkpoint about to be loaded: a refusal carries its report. */
async function checkBeforeLoading(dir: string, logger: Logger | undefined): Promise<void> {
  const report = await checkCheckpoint(dir);
  if (!report.loadable) throw new CheckpointRefusedError(`the checkpoint cannot be loaded:\n${formatCheckpointReport(report)}`);
  const summary = {
    checkpoint: dir,
    variant: report.variant,
    parameters: report.parameters,
    dtypes: report.dtypes,
    weightBytes: report.weightBytes,
    conversionBytes: report.conversionBytes,
    ignoredTensors: report.unexpected.map((t) => t.name),
    synthetic: report.synthetic,
  };
  if (logger) logger.info(summary, 'checkpoint checked');
  else if (report.conversionBytes > 0) {
    process.stderr.write(`scriptorium: ${dir} stores weights in F16/F32: converting them to BF16 at load takes up to ${(report.conversionBytes / 1e6).toFixed(1)} MB more memory\n`);
  }
}

/** `dir` when it holds a config.json; otherwise an error that says how to get a checkpoint there. */
async function localModelDir(dir: string, fromEnvironment: boolean): Promise<string> {
  const named = fromEnvironment ? `SCRIPTORIUM_MODEL=${dir}` : `--model ${dir}`;
  const download = `download one with \`scriptorium model download v1|v2|v3 --dir ${dir}\``;
  const info = await stat(dir).catch(() => undefined);
  if (!info) throw new Error(`${named}: no such folder; ${download}`);
  if (!info.isDirectory()) throw new Error(`${named} is a file, not a checkpoint folder (config.json, safetensors, tokenizer.json)`);
  if (!(await exists(path.join(dir, 'config.json')))) {
    const empty = (await readdir(dir)).length === 0;
    throw new Error(`${named} ${empty ? 'is an empty folder' : 'holds no checkpoint (no config.json)'}; ${download}`);
  }
  return dir;
}

/**
 * The local copy of the checkpoint at s3://bucket/prefix/, in <cacheDir>/<bucket>/<prefix>/: the whole
 * prefix names the folder, so that two models called alike under different prefixes never share one.
 */
async function fetchS3Model(url: string, cacheDir: string): Promise<string> {
  const storage = new S3Storage(url);
  const dir = path.join(path.resolve(cacheDir), storage.bucket, ...storage.prefix.split('/').filter(Boolean));
  const say = (line: string) => process.stderr.write(`scriptorium: ${line}\n`);
  const onEvent = (event: MirrorEvent) => {
    if (event.type === 'listed') say(`model ${storage.url}: ${event.files} files, ${gigabytes(event.bytes)}, into ${dir}`);
    else if (event.type === 'downloaded') say(`model ${storage.url}: ${event.file} downloaded and verified (${gigabytes(event.bytes)})`);
    else if (event.type === 'removed') say(`model ${storage.url}: removed ${event.file} from the cache (not in SHA256SUMS)`);
  };
  try {
    const summary = await mirrorVerified(storage, dir, onEvent);
    if (summary.downloaded.length === 0) say(`model ${storage.url}: all ${summary.reused.length} files already verified in ${dir}`);
  } finally {
    storage.destroy();
  }
  if (!(await exists(path.join(dir, 'config.json')))) {
    throw new Error(`${url} holds no config.json (it must be a Hugging Face checkpoint folder, listed in its SHA256SUMS)`);
  }
  return dir;
}

function gigabytes(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;
}
