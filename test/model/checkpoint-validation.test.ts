// Damaged or inconsistent checkpoints fail to load with an error that names the problem; the
// process never crashes. The cases (test/support/damaged-checkpoints.ts) are copies of the tiny V1
// checkpoint; `model check` is tested on the same ones.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { NativeModel } from '../../src/engine/native-model.js';
import { damagedCheckpoints } from '../support/damaged-checkpoints.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const tinyDir = await tinyCheckpoint('v1');
const index = JSON.parse(await readFile(path.join(tinyDir, 'model.safetensors.index.json'), 'utf8'));
const damaged = damagedCheckpoints(tinyDir, path.join(tinyDir, Object.values(index.weight_map as Record<string, string>)[0]));

describe('loading a damaged checkpoint', () => {
  after(() => damaged.cleanup());

  for (const { damage, make, error } of damaged.cases) {
    test(`${damage} is refused with an error naming it`, async () => {
      await assert.rejects(NativeModel.load(await make()), error);
    });
  }
});
