// The shared vocabulary: the variants, and which tasks and vision modes each was released with.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { modesOf, OCR_TASKS, tasksOf, VARIANTS, VISION_MODES } from '../../src/vocabulary/ocr-vocabulary.js';

test('V1 and V2 read with ocr and markdown, V3 with parse and parse-multi', () => {
  assert.deepEqual(VARIANTS, ['v1', 'v2', 'v3']);
  assert.deepEqual(tasksOf('v1'), ['ocr', 'markdown']);
  assert.deepEqual(tasksOf('v2'), ['ocr', 'markdown']);
  assert.deepEqual(tasksOf('v3'), ['parse', 'parse-multi']);
  assert.deepEqual([...new Set(VARIANTS.flatMap(tasksOf))], [...OCR_TASKS]);
});

test('V2 has the one mode gundam; V1 and V3 all five', () => {
  assert.deepEqual(modesOf('v1'), ['tiny', 'small', 'base', 'large', 'gundam']);
  assert.deepEqual(modesOf('v2'), ['gundam']);
  assert.deepEqual(modesOf('v3'), VISION_MODES);
});
