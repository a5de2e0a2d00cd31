// --precision: parsed values, the fallback when absent, a clear usage error otherwise, and the
// precision a loaded model reports.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseCommandLine } from '../../src/cli/command-line.js';
import { ENGINE_OPTIONS } from '../../src/cli/engine-options.js';
import { UsageError } from '../../src/cli/usage.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { parsePrecision } from '../../src/engine/precision.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

test('exact and fast parse; anything else names the choices', () => {
  assert.equal(parsePrecision('exact'), 'exact');
  assert.equal(parsePrecision('fast'), 'fast');
  assert.throws(() => parsePrecision('FAST'), /--precision must be exact or fast \(got "FAST"\)/);
});

test('the commands default to fast, take exact, and turn a bad value into a usage error', () => {
  const precision = (...args: string[]) => parseCommandLine(args, ENGINE_OPTIONS).options.precision;
  assert.equal(precision(), 'fast');
  assert.equal(precision('--precision', 'exact'), 'exact');
  assert.throws(() => precision('--precision', 'bf16'), (error: unknown) => error instanceof UsageError && /--precision/.test(error.message));
});

test('a model loads in the precision asked (exact without one), and the addon refuses an unknown one', async () => {
  const dir = await tinyCheckpoint('v1');
  assert.equal((await NativeModel.load(dir)).precision, 'exact');
  assert.equal((await NativeModel.load(dir, { precision: 'fast' })).precision, 'fast');
  await assert.rejects(NativeModel.load(dir, { precision: 'half' as 'fast' }), /precision must be 'exact' or 'fast', got 'half'/);
});
