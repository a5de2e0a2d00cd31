// `model check`: whether a worker would load a checkpoint folder (local or s3://), read from its
// config.json, index, shard headers and tokenizer files without fetching the weights. Shard headers
// go through the engine's own validation (readSafetensorsHeader); the tensors are compared with what
// config.json implies (the tensor manifest).
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { parseModelConfig } from '../engine/model-config.js';
import { nativeBinding, type SafetensorsHeaderEntry } from '../engine/native-binding.js';
import type { ConfigJson } from './synth/model-configs.js';
import { SYNTHETIC_MARKER_FILE } from './synth/synthetic-marker.js';
import { elementCount, tensorManifest, type TensorSpec } from './synth/tensor-manifest.js';
import { BOS_TOKEN, EOS_TOKEN, OCR_FIRST_ADDED_ID, ocrAddedTokens, readDeepSeekV3TokenizerJson, type TokenizerJson } from '../engine/tokenizer-files.js';
import { MANIFEST_NAME, parseManifest } from '../storage/verified-mirror.js';
import { checkpointIdentity, decidesOutput, identityOfFiles } from './checkpoint-identity.js';
import { openCheckpointSource, type CheckpointSource } from './checkpoint-source.js';

const INDEX_FILE = 'model.safetensors.index.json';
const SINGLE_FILE = 'model.safetensors';
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];
/** The engine's bound on a safetensors header (native/common/safetensors.h kMaxHeaderBytes). */
const MAX_HEADER_BYTES = 100_000_000;
const FLOAT_DTYPES = new Set(['BF16', 'F16', 'F32']);
/** Bound on config.json, the index, tokenizer.json and SHA256SUMS (real ones are at most about 10 MB). */
const MAX_TEXT_FILE_BYTES = 100_000_000;

export interface CheckedTensor {
  name: string;
  dtype: string;
  shape: number[];
}

export interface CheckpointReport {
  location: string;
  /** True when a worker would load the folder: `problems` is empty. */
  loadable: boolean;
  /** Why a worker would refuse it, one sentence each. */
  problems: string[];
  /** What does not stop a worker but deserves a look. */
  warnings: string[];
  variant?: Variant;
  /** Parameters of the model config.json describes. */
  parameters?: number;
  /** Tensors in the checkpoint per dtype. */
  dtypes: Record<string, number>;
  /** Tensors the model needs that the checkpoint lacks. */
  missing: string[];
  /** Tensors whose shape differs from what config.json implies. */
  misshaped: Array<{ name: string; shape: number[]; expected: number[] }>;
  /** Tensors the model needs stored in a dtype it cannot compute with. */
  unusableDtypes: CheckedTensor[];
  /** Tensors the model does not use (extra buffers such as position_ids); loading ignores them. */
  unexpected: CheckedTensor[];
  /** Tensor bytes in the shards (memory-mapped at load). */
  weightBytes: number;
  /** At most this much memory on top of the mapping: BF16 copies of the F16 / F32 weights. */
  conversionBytes: number;
  tokenizer: { present: string[]; absent: string[]; vocabulary: string };
  /** What workers record in every result ('sha256:…'); absent when it cannot be derived. */
  identity?: string;
  synthetic: boolean;
}

export interface CheckOptions {
  variant?: Variant;
  /** Derive the identity: hashes every local file (seconds for a full checkpoint); s3:// needs SHA256SUMS. */
  identity?: boolean;
}

export async function checkCheckpoint(location: string, options: CheckOptions = {}): Promise<CheckpointReport> {
  const source = openCheckpointSource(location);
  try {
    return await check(source, options);
  } finally {
    source.close();
  }
}

async function check(source: CheckpointSource, options: CheckOptions): Promise<CheckpointReport> {
  const report: CheckpointReport = {
    location: source.location, loadable: false, problems: [], warnings: [], dtypes: {}, missing: [], misshaped: [],
    unusableDtypes: [], unexpected: [], weightBytes: 0, conversionBytes: 0,
    tokenizer: { present: [], absent: [], vocabulary: 'not checked' }, synthetic: false,
  };
  const files = await source.list();
  report.synthetic = files.has(SYNTHETIC_MARKER_FILE);
  report.tokenizer.present = TOKENIZER_FILES.filter((name) => files.has(name));
  report.tokenizer.absent = TOKENIZER_FILES.filter((name) => !files.has(name));
  if (!files.has('config.json')) {
    report.problems.push(`no config.json: this is no checkpoint folder (get one with \`scriptorium model download v1|v2|v3 --dir DIR\`)`);
    return report;
  }
  const manifest = await expectedTensors(source, files, options.variant, report);
  const tensors = await readTensors(source, files, report);
  if (manifest && tensors) compareTensors(manifest, tensors, report);
  await checkTokenizer(source, files, report);
  if (options.identity) await deriveIdentity(source, files, report);
  report.loadable = report.problems.length === 0;
  return report;
}

/** A JSON or text file of the checkpoint, refused unread when it is larger than any real one. */
async function readText(source: CheckpointSource, files: Map<string, number>, name: string): Promise<string> {
  const size = files.get(name) ?? 0;
  if (size > MAX_TEXT_FILE_BYTES) throw new Error(`${name} is ${size} bytes, implausibly large (at most ${MAX_TEXT_FILE_BYTES})`);
  return (await source.read(name)).toString('utf8');
}

function parseJson(text: string, name: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The tensors config.json implies, or undefined (with the problem recorded) when it cannot be read. */
async function expectedTensors(source: CheckpointSource, files: Map<string, number>, variant: Variant | undefined, report: CheckpointReport): Promise<TensorSpec[] | undefined> {
  let raw: unknown;
  try {
    raw = parseJson(await readText(source, files, 'config.json'), 'config.json');
  } catch (error) {
    report.problems.push((error as Error).message);
    return undefined;
  }
  try {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('it must hold a JSON object');
    try {
      report.variant = parseModelConfig(raw as Record<string, unknown>, variant).variant;
    } catch (error) {
      // The variant changes prompts and attention, not the tensors: --variant settles it at load.
      report.warnings.push((error as Error).message);
    }
    const manifest = tensorManifest(raw as ConfigJson);
    report.parameters = manifest.reduce((sum, spec) => sum + elementCount(spec), 0);
    return manifest;
  } catch (error) {
    report.problems.push(`config.json: ${(error as Error).message}`);
    return undefined;
  }
}

/** Every tensor the loader would take, by name, read from the shard headers the index names. */
async function readTensors(source: CheckpointSource, files: Map<string, number>, report: CheckpointReport): Promise<Map<string, SafetensorsHeaderEntry> | undefined> {
  let weightMap: Map<string, string>;
  if (files.has(INDEX_FILE)) {
    try {
      weightMap = parseIndex(await readText(source, files, INDEX_FILE));
    } catch (error) {
      report.problems.push(`${INDEX_FILE}: ${(error as Error).message}`);
      return undefined;
    }
  } else if (files.has(SINGLE_FILE)) {
    weightMap = new Map();
  } else {
    report.problems.push(`no ${INDEX_FILE} or ${SINGLE_FILE}: the folder holds no weights`);
    return undefined;
  }
  const shards = files.has(INDEX_FILE) ? [...new Set(weightMap.values())].sort() : [SINGLE_FILE];
  const tensors = new Map<string, SafetensorsHeaderEntry>();
  for (const shard of shards) {
    const size = files.get(shard);
    if (size === undefined) {
      report.problems.push(`shard ${shard} named in the index is missing`);
      continue;
    }
    let entries: SafetensorsHeaderEntry[];
    try {
      entries = await readShardHeader(source, shard, size);
    } catch (error) {
      report.problems.push((error as Error).message);
      continue;
    }
    const inShard = new Map(entries.map((entry) => [entry.name, entry]));
    const names = files.has(INDEX_FILE) ? [...weightMap].filter(([, file]) => file === shard).map(([name]) => name) : [...inShard.keys()];
    for (const name of names) {
      const entry = inShard.get(name);
      if (entry) tensors.set(name, entry);
      else report.problems.push(`tensor ${name} listed in the index is missing from shard ${shard}`);
    }
  }
  for (const entry of tensors.values()) {
    report.dtypes[entry.dtype] = (report.dtypes[entry.dtype] ?? 0) + 1;
    report.weightBytes += entry.end - entry.begin;
  }
  return tensors;
}

function parseIndex(text: string): Map<string, string> {
  let index: unknown;
  try {
    index = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`);
  }
  const weightMap = (index as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) throw new Error('missing weight_map object');
  const map = new Map<string, string>();
  for (const [name, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string' || file === '' || file.includes('/') || file.includes('..')) {
      throw new Error(`weight_map entry for ${name} is not a plain file name`);
    }
    map.set(name, file);
  }
  return map;
}

async function readShardHeader(source: CheckpointSource, shard: string, size: number): Promise<SafetensorsHeaderEntry[]> {
  if (size < 8) throw new Error(`model file ${shard}: truncated: ${size} bytes, shorter than the 8-byte header length`);
  const length = (await source.head(shard, 8)).readBigUInt64LE(0);
  if (length > BigInt(size - 8)) throw new Error(`model file ${shard}: header length ${length} runs past the end of the file (${size} bytes)`);
  if (length > BigInt(MAX_HEADER_BYTES)) throw new Error(`model file ${shard}: header length ${length} is implausibly large (at most ${MAX_HEADER_BYTES})`);
  const json = (await source.head(shard, 8 + Number(length))).subarray(8);
  return nativeBinding().readSafetensorsHeader(json, size - 8 - Number(length), shard).tensors;
}

function compareTensors(manifest: TensorSpec[], tensors: Map<string, SafetensorsHeaderEntry>, report: CheckpointReport): void {
  const expected = new Map(manifest.map((spec) => [spec.name, spec]));
  for (const spec of manifest) {
    const tensor = tensors.get(spec.name);
    if (spec.unread) continue; // loading ignores it, whatever its shape or dtype
    if (!tensor) report.missing.push(spec.name);
    else if (tensor.shape.join() !== spec.shape.join()) report.misshaped.push({ name: spec.name, shape: tensor.shape, expected: spec.shape });
    else if (!FLOAT_DTYPES.has(tensor.dtype)) report.unusableDtypes.push({ name: spec.name, dtype: tensor.dtype, shape: tensor.shape });
    else if (tensor.dtype !== 'BF16') report.conversionBytes += 2 * elementCount(spec);
  }
  for (const tensor of tensors.values()) {
    if (!expected.has(tensor.name)) report.unexpected.push({ name: tensor.name, dtype: tensor.dtype, shape: tensor.shape });
  }
  for (const name of report.missing) report.problems.push(`missing tensor ${name}`);
  for (const { name, shape, expected: want } of report.misshaped) {
    report.problems.push(`tensor ${name} has shape [${shape}] but config.json implies [${want}]`);
  }
  for (const { name, dtype } of report.unusableDtypes) report.problems.push(`tensor ${name} has dtype ${dtype}; a weight must be BF16, F16 or F32`);
}

/** The expected vocabulary, read once per process (a 7 MB file). */
let deepSeekV3Tokenizer: Promise<TokenizerJson> | undefined;

async function checkTokenizer(source: CheckpointSource, files: Map<string, number>, report: CheckpointReport): Promise<void> {
  if (!files.has('tokenizer.json')) {
    report.tokenizer.vocabulary = 'no tokenizer.json';
    report.problems.push('no tokenizer.json: the engine needs it to read prompts and write text');
    return;
  }
  let json: TokenizerJson;
  try {
    json = parseJson(await readText(source, files, 'tokenizer.json'), 'tokenizer.json') as TokenizerJson;
  } catch (error) {
    report.tokenizer.vocabulary = 'unreadable';
    report.problems.push((error as Error).message);
    return;
  }
  const base = await (deepSeekV3Tokenizer ??= readDeepSeekV3TokenizerJson());
  const vocab = json.model?.vocab ?? {};
  const expectedVocab = Object.entries(base.model.vocab);
  const differing = expectedVocab.filter(([token, id]) => vocab[token] !== id).length + Math.max(0, Object.keys(vocab).length - expectedVocab.length);
  const added = new Map((json.added_tokens ?? []).map((token) => [token.content, token.id]));
  const specials = ocrAddedTokens(base.added_tokens).filter((token) => [BOS_TOKEN, EOS_TOKEN].includes(token.content) || token.id >= OCR_FIRST_ADDED_ID);
  const wrongSpecials = specials.filter((token) => added.get(token.content) !== token.id);
  if (wrongSpecials.length > 0) {
    report.tokenizer.vocabulary = 'differs';
    const shown = wrongSpecials.slice(0, 3).map((token) => `${token.content} is ${added.get(token.content) ?? 'absent'} (expected ${token.id})`);
    report.problems.push(`tokenizer.json: ${wrongSpecials.length} special tokens the prompts use are at other ids: ${shown.join(', ')}`);
  } else if (differing > 0) {
    report.tokenizer.vocabulary = `differs in ${differing} of ${expectedVocab.length} entries`;
    report.warnings.push(`tokenizer.json: the vocabulary differs from DeepSeek-OCR's in ${differing} entries; text may decode wrongly`);
  } else {
    report.tokenizer.vocabulary = `matches (${expectedVocab.length} tokens + ${specials.length} special tokens checked)`;
  }
}

async function deriveIdentity(source: CheckpointSource, files: Map<string, number>, report: CheckpointReport): Promise<void> {
  if (!source.location.startsWith('s3://')) {
    report.identity = await checkpointIdentity(source.location);
    return;
  }
  if (!files.has(MANIFEST_NAME)) {
    report.problems.push(`no ${MANIFEST_NAME}: workers fetch only the files it names (write it with \`sha256sum * > ${MANIFEST_NAME}\` in the folder)`);
    return;
  }
  try {
    const entries = parseManifest(await readText(source, files, MANIFEST_NAME), `${source.location}${MANIFEST_NAME}`);
    const listed = new Map(entries.map((entry) => [entry.name, entry.sha256]));
    const needed = [...files.keys()].filter((name) => decidesOutput(name) || name === INDEX_FILE);
    const unlisted = needed.filter((name) => !listed.has(name));
    if (unlisted.length > 0) report.problems.push(`${MANIFEST_NAME} does not name ${unlisted.join(', ')}: workers would not fetch them`);
    const absent = entries.filter((entry) => !files.has(entry.name)).map((entry) => entry.name);
    if (absent.length > 0) report.problems.push(`${MANIFEST_NAME} names ${absent.join(', ')}, absent from the prefix`);
    if (unlisted.length === 0 && absent.length === 0) {
      report.identity = identityOfFiles(entries.map((entry) => ({ name: entry.name, sha256: entry.sha256, size: files.get(entry.name) ?? 0 })));
    }
  } catch (error) {
    report.problems.push((error as Error).message);
  }
}
