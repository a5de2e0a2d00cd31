// How many pages decode together: `--batch N` as given, `auto` per backend, and the option's parsing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseCommandLine } from '../../src/cli/command-line.js';
import { BATCH_OPTION } from '../../src/cli/engine-options.js';
import { UsageError } from '../../src/cli/usage.js';
import { AUTO_BATCH, parseBatchSize, resolveBatchSize } from '../../src/engine/batch-size.js';

describe('batch size', () => {
  test('a given size is used as given, on any backend', () => {
    assert.deepEqual(resolveBatchSize(12, 'cpu'), { size: 12, why: 'given' });
    assert.deepEqual(resolveBatchSize(12, 'vulkan'), { size: 12, why: 'given' });
  });

  test('auto is 32 on the CPU and 64 on a GPU, each with the reason the worker logs', () => {
    assert.equal(resolveBatchSize('auto', 'cpu').size, 32);
    assert.equal(resolveBatchSize('auto', 'vulkan').size, 64);
    assert.match(resolveBatchSize('auto', 'cpu').why, /^auto: /);
    assert.equal(resolveBatchSize('auto', 'vulkan'), AUTO_BATCH.vulkan);
  });

  test('the text of --batch is a positive integer or auto', () => {
    assert.equal(parseBatchSize('auto'), 'auto');
    assert.equal(parseBatchSize('16'), 16);
    for (const text of ['0', '-2', '1.5', 'Auto', '', '08']) assert.equal(parseBatchSize(text), undefined, text);
  });

  test('--batch defaults to auto; anything else is a usage error naming the option', () => {
    const batch = (args: string[]) => parseCommandLine(args, { batch: BATCH_OPTION }).options.batch;
    assert.equal(batch([]), 'auto');
    assert.equal(batch(['--batch', '4']), 4);
    assert.throws(() => batch(['--batch', 'many']), (error: unknown) => error instanceof UsageError && /--batch must be a positive integer or auto \(got "many"\)/.test(error.message));
  });
});
