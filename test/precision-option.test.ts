// --precision: parsed values, the fallback when absent, a clear usage error otherwise, and the
// precision a loaded model reports.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { precisionOption } from '../src/cli/precision-option.js';
import { UsageError } from '../src/cli/usage.js';
import { NativeModel } from '../src/engine/native-model.js';
import { parsePrecision } from '../src/engine/precision.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

test('exact and fast parse; anything else names the choices', () => {
  assert.equal(parsePrecision('exact'), 'exact');
  assert.equal(parsePrecision('fast'), 'fast');
  assert.throws(() => parsePrecision('FAST'), /--precision must be exact or fast \(got "FAST"\)/);
});

test('the option falls back when absent and turns a bad value into a usage error', () => {
  assert.equal(precisionOption(undefined, 'fast', 'usage text'), 'fast');
  assert.equal(precisionOption(undefined, 'exact', 'usage text'), 'exact');
  assert.equal(precisionOption('exact', 'fast', 'usage text'), 'exact');
  assert.throws(() => precisionOption('bf16', 'fast', 'usage text'), (error: unknown) => error instanceof UsageError && error.usage === 'usage text');
});

test('a model loads in the precision asked (exact without one), and the addon refuses an unknown one', async () => {
  const dir = await tinyCheckpoint('v1');
  assert.equal((await NativeModel.load(dir)).precision, 'exact');
  assert.equal((await NativeModel.load(dir, { precision: 'fast' })).precision, 'fast');
  await assert.rejects(NativeModel.load(dir, { precision: 'half' as 'fast' }), /precision must be 'exact' or 'fast', got 'half'/);
});
