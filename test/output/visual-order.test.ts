// The visual order of a line, against orders worked out by hand from the Unicode Bidirectional
// Algorithm: left-to-right lines untouched, right-to-left runs reversed, numbers and left-to-right
// words inside them kept in order, neutrals joining the runs around them, marks before their base.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { textUnits } from '../../src/output/text-layer-font.js';
import { visualOrder } from '../../src/output/visual-order.js';

const shown = (line: string) => visualOrder(textUnits(line)).join('');

test('a line without right-to-left letters is shown as it reads', () => {
  for (const line of ['Quarterly report 2024', '光学字符识别', '∑ x² ≤ ∞', '(1,000) 👍🏽']) assert.equal(shown(line), line);
});

test('a right-to-left line is reversed, its numbers and left-to-right words kept in reading order', () => {
  assert.equal(shown('שלום עולם'), 'םלוע םולש');
  assert.equal(shown('العام 2024 كان جيدا'), 'اديج ناك 2024 ماعلا');
  // One separator between digits belongs to the number (W4); a sentence's full stop goes to the line's end, at the left.
  assert.equal(shown('המחיר 1,000 ש"ח.'), '.ח"ש 1,000 ריחמה');
  assert.equal(shown('שלום Alice ו-Bob'), 'Bob-ו Alice םולש');
});

test('in a left-to-right line, only its right-to-left runs turn, with the numbers that follow them', () => {
  assert.equal(shown('abc שלום 123 def'), 'abc 123 םולש def');
  assert.equal(shown('Room 12 is שמאל'), 'Room 12 is לאמש');
});

test('marks stay with their letter: before it once its run is reversed, as extractors expect', () => {
  assert.equal(shown('مَرْ'), '\u0652\u0631\u064e\u0645');
  assert.equal(shown('מְ 1'), '1 \u05b0\u05de');
});
