/**
 * The DeepSeek-OCR tokenizer: byte-level BPE as the Hugging Face `tokenizers` library runs a checkpoint's
 * tokenizer.json (docs/model.md §2). Text is cut at added tokens first; every other segment goes through the
 * DeepSeek-V3 pre-tokenizer (three regex splits), each piece is mapped byte by byte to the GPT-2 byte alphabet
 * and merged by BPE rank.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BOS_TOKEN, mergePair, type AddedTokenEntry, type SplitPreTokenizer, type TokenizerJson } from './tokenizer-files.js';

export interface EncodeOptions {
  /** Prepend BOS (id 0). Default false: the prompt builder adds BOS itself. */
  addBos?: boolean;
}

export interface DecodeOptions {
  /** Drop added tokens flagged special (BOS, EOS, `<image>`, `<|ref|>`…). Default false, as official OCR decoding. */
  skipSpecial?: boolean;
}

/**
 * The DeepSeek-V3 Split patterns as tokenizer.json spells them (Oniguruma) and their JavaScript translations.
 * Oniguruma's `\s` on UTF-8 text is the Unicode White_Space set (it includes U+0085 and excludes U+FEFF,
 * unlike JavaScript's `\s`), hence `\p{White_Space}`; every other construct means the same in both engines.
 */
const PRE_TOKENIZER_SPLITS: readonly { oniguruma: string; javascript: RegExp }[] = [
  { oniguruma: '\\p{N}{1,3}', javascript: /\p{N}{1,3}/gu },
  { oniguruma: '[一-龥぀-ゟ゠-ヿ]+', javascript: /[一-龥぀-ゟ゠-ヿ]+/gu },
  {
    oniguruma:
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    javascript: new RegExp(
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*" +
        '|\\p{White_Space}*[\r\n]+|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+',
      'gu',
    ),
  },
];

/** Pre-tokens longer than this (UTF-16 units) are not cached, like `tokenizers`' BPE cache. */
const MAX_CACHED_WORD_LENGTH = 256;
const MAX_CACHED_WORDS = 50_000;

/** GPT-2's byte alphabet: byte b -> the printable character that stands for it in the vocabulary. */
const BYTE_TO_CHAR: readonly string[] = (() => {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  let next = 256;
  return Array.from({ length: 256 }, (_, b) => String.fromCharCode(printable(b) ? b : next++));
})();
const CHAR_TO_BYTE = new Map(BYTE_TO_CHAR.map((char, byte) => [char, byte]));

const utf8Encoder = new TextEncoder();

const NO_BYTES = new Uint8Array(0);

export class Tokenizer {
  /** Number of token ids: highest defined id + 1 (128,827 for DeepSeek-OCR: base vocabulary plus added tokens). */
  readonly vocabSize: number;
  /** BPE vocabulary: token -> id. */
  private readonly vocab = new Map<string, number>();
  /** Added tokens: content -> id (they take precedence over a vocabulary entry of the same text). */
  private readonly addedIds: Map<string, number>;
  /** id -> token text; holes for undefined ids. */
  private readonly tokensById: (string | undefined)[] = [];
  private readonly specialIds: Set<number>;
  /** Matchers for added tokens: those matched on raw text first, then those matched on normalized text. */
  private readonly addedTokenMatchers: RegExp[];
  private readonly bpe: BytePairMerger;
  private readonly bosId: number;
  /** id -> the bytes the ByteLevel decoder makes of it, filled on first use. */
  private readonly bytesById: (Uint8Array | undefined)[] = [];
  /** pre-token -> ids */
  private readonly wordCache = new Map<string, number[]>();

  /** Loads `dir`/tokenizer.json. */
  static async fromDir(dir: string): Promise<Tokenizer> {
    const json = JSON.parse(await readFile(path.join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
    return new Tokenizer(json);
  }

  constructor(json: TokenizerJson) {
    assertSupported(json);
    const vocabJson = json.model.vocab;
    for (const token in vocabJson) {
      this.vocab.set(token, vocabJson[token]);
      this.tokensById[vocabJson[token]] = token;
    }
    this.addedIds = new Map(json.added_tokens.map((t) => [t.content, t.id]));
    for (const added of json.added_tokens) this.tokensById[added.id] = added.content;
    this.vocabSize = this.tokensById.length;
    this.specialIds = new Set(json.added_tokens.filter((t) => t.special).map((t) => t.id));
    this.addedTokenMatchers = [false, true]
      .map((normalized) => json.added_tokens.filter((t) => t.normalized === normalized))
      .filter((tokens) => tokens.length > 0)
      .map(addedTokenMatcher);
    this.bpe = new BytePairMerger(this.vocab, json.model.merges.map(mergePair), json.model.ignore_merges ?? false);
    const bosId = this.idOf(BOS_TOKEN);
    if (bosId === undefined) throw new Error(`tokenizer.json has no BOS token ${BOS_TOKEN}`);
    this.bosId = bosId;
  }

  /** Token ids of `text`; added tokens (e.g. `<image>`) anywhere in it become their ids. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids = options.addBos ? [this.bosId] : [];
    for (const segment of splitOnAddedTokens([{ text, isAddedToken: false }], this.addedTokenMatchers)) {
      if (segment.isAddedToken) ids.push(this.addedIds.get(segment.text)!);
      else for (const word of preTokenize(segment.text)) for (const id of this.encodeWord(word)) ids.push(id);
    }
    return ids;
  }

  /** The text of `ids`; ids without a token are skipped, invalid UTF-8 becomes U+FFFD (as `tokenizers` does). */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const decoder = this.streamDecoder(options);
    return ids.map((id) => decoder.push(id)).join('') + decoder.flush();
  }

  /** A decoder for ids arriving one at a time, e.g. during generation. */
  streamDecoder(options: DecodeOptions = {}): StreamingDecoder {
    return new StreamingDecoder((id) => {
      if (options.skipSpecial && this.specialIds.has(id)) return undefined;
      return this.bytesOf(id);
    });
  }

  /** The bytes `id` decodes to (none for an id without a token); decode() joins them and reads them as UTF-8. */
  tokenBytes(id: number): Uint8Array {
    return this.bytesOf(id) ?? NO_BYTES;
  }

  idOf(token: string): number | undefined {
    return this.addedIds.get(token) ?? this.vocab.get(token);
  }

  tokenOf(id: number): string | undefined {
    return this.tokensById[id];
  }

  private encodeWord(word: string): number[] {
    const cached = this.wordCache.get(word);
    if (cached) return cached;
    let byteChars = '';
    for (const byte of utf8Encoder.encode(word)) byteChars += BYTE_TO_CHAR[byte];
    const ids = this.bpe.merge(byteChars);
    if (word.length <= MAX_CACHED_WORD_LENGTH) {
      if (this.wordCache.size >= MAX_CACHED_WORDS) this.wordCache.clear();
      this.wordCache.set(word, ids);
    }
    return ids;
  }

  /** ByteLevel decoding of one token: its byte-alphabet characters as bytes, or its UTF-8 if it has others. */
  private bytesOf(id: number): Uint8Array | undefined {
    let bytes = this.bytesById[id];
    if (bytes) return bytes;
    const token = this.tokensById[id];
    if (token === undefined) return undefined;
    const chars = [...token];
    bytes = chars.every((c) => CHAR_TO_BYTE.has(c))
      ? Uint8Array.from(chars, (c) => CHAR_TO_BYTE.get(c)!)
      : utf8Encoder.encode(token);
    this.bytesById[id] = bytes;
    return bytes;
  }
}

/**
 * Turns token ids into text as they arrive: `push` returns only complete UTF-8 characters and holds back the
 * leading bytes of a character that continues in a later token; `flush` returns what is held (U+FFFD for an
 * unfinished character). Pushing all ids then flushing gives exactly `Tokenizer.decode`.
 */
export class StreamingDecoder {
  /** ignoreBOM keeps a leading U+FEFF, as Rust's from_utf8_lossy does. */
  private readonly utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

  /** `bytesOf(id)`: the bytes id decodes to, or undefined to skip it. */
  constructor(private readonly bytesOf: (id: number) => Uint8Array | undefined) {}

  push(id: number): string {
    const bytes = this.bytesOf(id);
    return bytes ? this.utf8.decode(bytes, { stream: true }) : '';
  }

  flush(): string {
    return this.utf8.decode();
  }
}

/**
 * Byte-level BPE over one pre-token, as `tokenizers`' `Word::merge_all`: repeatedly merge the adjacent pair
 * with the lowest rank (leftmost first among equal ranks), using a heap of candidate merges.
 */
class BytePairMerger {
  /** pair key (leftId * pairKeyBase + rightId) -> merge rank */
  private readonly rankByPair = new Map<number, number>();
  /** merge rank -> id of the merged token */
  private readonly mergedIdByRank: number[];
  /** One more than the highest vocabulary id, so that pair keys are unique. */
  private readonly pairKeyBase: number;

  constructor(
    private readonly vocab: Map<string, number>,
    merges: [string, string][],
    /** When set, a pre-token that is itself in the vocabulary is emitted whole (tokenizers' `ignore_merges`). */
    private readonly ignoreMerges: boolean,
  ) {
    for (const char of BYTE_TO_CHAR) {
      if (!vocab.has(char)) throw new Error(`byte-level vocabulary lacks the byte token ${JSON.stringify(char)}`);
    }
    this.pairKeyBase = [...vocab.values()].reduce((max, id) => Math.max(max, id), 0) + 1;
    this.mergedIdByRank = merges.map(([left, right], rank) => {
      const ids = [vocab.get(left), vocab.get(right), vocab.get(left + right)];
      if (ids.some((id) => id === undefined)) throw new Error(`merge ${left} ${right} uses a token outside the vocabulary`);
      this.rankByPair.set(this.pairKey(ids[0]!, ids[1]!), rank);
      return ids[2]!;
    });
  }

  /** Ids of `byteChars`, a pre-token spelled in the byte alphabet. */
  merge(byteChars: string): number[] {
    const whole = this.ignoreMerges ? this.vocab.get(byteChars) : undefined;
    if (whole !== undefined) return [whole];
    const n = byteChars.length;
    const ids = Int32Array.from(byteChars, (c) => this.vocab.get(c)!);
    // Symbols form a linked list over positions; a merged-away symbol has ids[pos] = -1.
    const next = Int32Array.from({ length: n }, (_, i) => i + 1);
    const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
    const candidates = new MergeHeap();
    const offer = (pos: number) => {
      const rank = next[pos] < n ? this.rankByPair.get(this.pairKey(ids[pos], ids[next[pos]])) : undefined;
      if (rank !== undefined) candidates.push(rank, pos);
    };
    for (let pos = 0; pos < n - 1; pos++) offer(pos);
    while (candidates.size > 0) {
      const { rank, pos } = candidates.pop();
      if (ids[pos] < 0 || next[pos] >= n) continue;
      const right = next[pos];
      // Stale entry unless the pair now at pos still merges into the same token.
      const currentRank = this.rankByPair.get(this.pairKey(ids[pos], ids[right]));
      if (currentRank === undefined || this.mergedIdByRank[currentRank] !== this.mergedIdByRank[rank]) continue;
      ids[pos] = this.mergedIdByRank[rank];
      ids[right] = -1;
      next[pos] = next[right];
      if (next[pos] < n) prev[next[pos]] = pos;
      if (prev[pos] >= 0) offer(prev[pos]);
      offer(pos);
    }
    const merged: number[] = [];
    for (let pos = 0; pos < n; pos = next[pos]) merged.push(ids[pos]);
    return merged;
  }

  private pairKey(leftId: number, rightId: number): number {
    return leftId * this.pairKeyBase + rightId;
  }
}

/** Binary min-heap of (rank, pos), ordered by rank then pos. */
class MergeHeap {
  /** rank * 2^32 + pos, so that numeric order is (rank, pos) order. */
  private readonly keys: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(rank: number, pos: number): void {
    const keys = this.keys;
    let i = keys.length;
    keys.push(rank * 2 ** 32 + pos);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keys[parent] <= keys[i]) break;
      [keys[parent], keys[i]] = [keys[i], keys[parent]];
      i = parent;
    }
  }

  pop(): { rank: number; pos: number } {
    const keys = this.keys;
    const top = keys[0];
    const last = keys.pop()!;
    if (keys.length > 0) {
      keys[0] = last;
      for (let i = 0; ; ) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < keys.length && keys[left] < keys[smallest]) smallest = left;
        if (right < keys.length && keys[right] < keys[smallest]) smallest = right;
        if (smallest === i) break;
        [keys[smallest], keys[i]] = [keys[i], keys[smallest]];
        i = smallest;
      }
    }
    return { rank: Math.floor(top / 2 ** 32), pos: top % 2 ** 32 };
  }
}

interface Segment {
  text: string;
  isAddedToken: boolean;
}

/** Cuts every non-token segment at each matcher's matches in turn (tokenizers' AddedVocabulary split). */
function splitOnAddedTokens(segments: Segment[], matchers: RegExp[]): Segment[] {
  for (const matcher of matchers) {
    segments = segments.flatMap((segment) => {
      if (segment.isAddedToken) return [segment];
      return isolateMatches(segment.text, matcher).map((piece) => ({ text: piece.text, isAddedToken: piece.matched }));
    });
  }
  return segments;
}

/** Matches any of `tokens`, leftmost then longest (the alternation lists longer tokens first). */
function addedTokenMatcher(tokens: AddedTokenEntry[]): RegExp {
  const escaped = tokens
    .map((t) => t.content)
    .sort((a, b) => b.length - a.length)
    .map((content) => content.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(escaped.join('|'), 'gu');
}

/** The DeepSeek-V3 pre-tokenizer: each Split (behavior Isolated) applied to every piece of the previous one. */
function preTokenize(text: string): string[] {
  let pieces = [text];
  for (const { javascript } of PRE_TOKENIZER_SPLITS) {
    pieces = pieces.flatMap((piece) => isolateMatches(piece, javascript).map((p) => p.text));
  }
  return pieces;
}

/** `text` cut into matches of `regex` (global) and the non-empty stretches between them, in order. */
function isolateMatches(text: string, regex: RegExp): { text: string; matched: boolean }[] {
  const pieces: { text: string; matched: boolean }[] = [];
  let end = 0;
  for (const match of text.matchAll(regex)) {
    if (match.index > end) pieces.push({ text: text.slice(end, match.index), matched: false });
    pieces.push({ text: match[0], matched: true });
    end = match.index + match[0].length;
  }
  if (end < text.length) pieces.push({ text: text.slice(end), matched: false });
  return pieces;
}

/** Throws unless `json` is a byte-level BPE tokenizer with the DeepSeek-V3 pre-tokenizer, which is all this class runs. */
function assertSupported(json: TokenizerJson): void {
  const problems: string[] = [];
  const { model, normalizer, pre_tokenizer: preTokenizer, decoder } = json;
  if (model.type !== 'BPE' || model.byte_fallback || model.continuing_subword_prefix || model.end_of_word_suffix) {
    problems.push('model must be plain BPE (no byte_fallback, continuing_subword_prefix or end_of_word_suffix)');
  }
  if (normalizer && !(normalizer.type === 'Sequence' && normalizer.normalizers?.length === 0)) {
    problems.push('normalizer must be absent or an empty Sequence');
  }
  const splits = preTokenizer?.pretokenizers ?? [];
  const last = splits.at(-1);
  const expected = PRE_TOKENIZER_SPLITS.map((s) => s.oniguruma);
  const patterns = splits.slice(0, -1).map((p) => (p.type === 'Split' && p.behavior === 'Isolated' && !p.invert
    ? (p as SplitPreTokenizer).pattern.Regex : undefined));
  if (preTokenizer?.type !== 'Sequence' || patterns.join('\0') !== expected.join('\0')
    || last?.type !== 'ByteLevel' || last.add_prefix_space || last.use_regex) {
    problems.push('pre_tokenizer must be the DeepSeek-V3 Sequence (three isolated Splits, then ByteLevel without prefix space or regex)');
  }
  if (decoder?.type !== 'ByteLevel') problems.push('decoder must be ByteLevel');
  if (json.added_tokens.some((t) => t.lstrip || t.rstrip || t.single_word)) {
    problems.push('added tokens with lstrip, rstrip or single_word are not supported');
  }
  if (problems.length > 0) throw new Error(`unsupported tokenizer.json: ${problems.join('; ')}`);
}
