import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { buildPromptIds, generationDefaults, IMAGE_TOKEN_ID, promptText, pythonStrip } from '../../src/engine/prompts.js';
import { Tokenizer } from '../../src/engine/tokenizer.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const tokenizer = await Tokenizer.fromDir(await tinyCheckpoint('v3'));
const BOS = 0;
const images = (k: number) => new Array<number>(k).fill(IMAGE_TOKEN_ID);
const range = (start: number, count: number) => Array.from({ length: count }, (_, i) => start + i);

describe('official prompt ids', () => {
  test('V1 "<image>\\nFree OCR." in base mode: BOS, 273 image ids, "\\nFree OCR."', () => {
    const prompt = buildPromptIds(tokenizer, BOS, promptText('v1', 'ocr'), [273]);
    assert.deepEqual(prompt.ids, [0, ...images(273), 201, 21431, 126041, 16]);
    assert.deepEqual(prompt.imagePositions, range(1, 273));
  });

  test('V2 grounded markdown with 6 tiles: 1121 image ids then <|grounding|> (128820) and the text', () => {
    const prompt = buildPromptIds(tokenizer, BOS, promptText('v2', 'markdown'), [1121]);
    assert.deepEqual(prompt.ids, [0, ...images(1121), 201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16]);
  });

  test('V3 "<image>document parsing." has no newline after the image', () => {
    assert.deepEqual(buildPromptIds(tokenizer, BOS, promptText('v3', 'parse'), [903]).ids, [0, ...images(903), 34030, 76466, 16]);
  });

  test('V3 multi-page puts all pages at the single <image>: 3 pages → 819 ids', () => {
    const prompt = buildPromptIds(tokenizer, BOS, promptText('v3', 'parse-multi'), [273, 273, 273]);
    assert.deepEqual(prompt.ids, [0, ...images(819), 37460, 4366, 76466, 16]);
    assert.deepEqual(prompt.imagePositions, range(1, 819));
  });

  test('no EOS is appended', () => {
    assert.notEqual(buildPromptIds(tokenizer, BOS, promptText('v1', 'ocr'), [73]).ids.at(-1), 1);
  });
});

describe('buildPromptIds', () => {
  test('strips the prompt as Python does (a trailing space of the README prompt is dropped)', () => {
    assert.deepEqual(buildPromptIds(tokenizer, BOS, ' <image>\nFree OCR. ', [2]).ids, buildPromptIds(tokenizer, BOS, '<image>\nFree OCR.', [2]).ids);
  });

  test('encodes the text on each side of an image separately', () => {
    const prompt = buildPromptIds(tokenizer, BOS, 'a<image>b', [2]);
    assert.deepEqual(prompt.ids, [0, ...tokenizer.encode('a'), IMAGE_TOKEN_ID, IMAGE_TOKEN_ID, ...tokenizer.encode('b')]);
    assert.deepEqual(prompt.imagePositions, [2, 3]);
  });

  test('one placeholder per image when there are several placeholders', () => {
    const prompt = buildPromptIds(tokenizer, BOS, '<image>x<image>', [1, 2]);
    assert.deepEqual(prompt.ids, [0, IMAGE_TOKEN_ID, ...tokenizer.encode('x'), IMAGE_TOKEN_ID, IMAGE_TOKEN_ID]);
  });

  test('a placeholder count that fits no image count is refused', () => {
    assert.throws(() => buildPromptIds(tokenizer, BOS, '<image><image>', [273]), /2 <image> placeholder\(s\) for 1 image/);
    assert.throws(() => buildPromptIds(tokenizer, BOS, 'Free OCR.', [273]), /0 <image>/);
  });
});

describe('pythonStrip', () => {
  test('removes Python whitespace (U+001C, U+0085, U+3000) but keeps U+FEFF, unlike String.trim', () => {
    assert.equal(pythonStrip('\x1c\u3000 x \x85\n'), 'x');
    assert.equal(pythonStrip('\ufeffx\ufeff'), '\ufeffx\ufeff');
  });
});

describe('tasks and generation defaults', () => {
  test('V3 has no markdown prompt and V1 no multi-page prompt', () => {
    assert.throws(() => promptText('v3', 'markdown'), /v3 has no markdown prompt/);
    assert.throws(() => promptText('v1', 'parse-multi'), /v1 has no parse-multi prompt/);
  });

  test('V1: 8192 tokens, n-gram 30 in a window of 90, <td> </td> never banned', () => {
    assert.deepEqual(generationDefaults('v1', 'markdown'), {
      maxNewTokens: 8192,
      maxTotalTokens: 8192,
      noRepeatNgram: { size: 30, window: 90, whitelist: [128821, 128822] },
    });
  });

  test('V2: n-gram 20 in a window of 90', () => {
    assert.deepEqual(generationDefaults('v2', 'ocr').noRepeatNgram, { size: 20, window: 90, whitelist: [128821, 128822] });
  });

  test('V3: 35 / 128 for one page, 35 / 1024 for several, 32768 tokens in all', () => {
    assert.deepEqual(generationDefaults('v3', 'parse'), {
      maxNewTokens: 32768,
      maxTotalTokens: 32768,
      noRepeatNgram: { size: 35, window: 128, whitelist: [] },
    });
    assert.equal(generationDefaults('v3', 'parse-multi').noRepeatNgram.window, 1024);
  });
});
