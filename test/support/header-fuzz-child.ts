// Child process of the header fuzz test: loads a checkpoint whose single safetensors file carries
// each mutation in turn and prints one JSON line per mutation ({i, error?}). Run apart from the test
// runner so that a crash (a signal, an abort) is seen by the parent as a failure, with the last
// line naming the mutation that was being loaded.
//   node header-fuzz-child.js SHARD CONFIG_JSON SEED COUNT WORK_DIR
import { copyFile, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import { NativeModel } from '../../src/engine/native-model.js';
import { headerMutations, writeMutatedFile } from './header-mutations.js';

const [shard, config, seed, count, workDir] = process.argv.slice(2);

const file = await readFile(shard);
const headerLength = Number(file.readBigUInt64LE(0));
const headerText = file.subarray(8, 8 + headerLength).toString('utf8');
const dataBytes = (await stat(shard)).size - 8 - headerLength;
await copyFile(config, path.join(workDir, 'config.json'));
const target = path.join(workDir, 'model.safetensors');

const mutations = headerMutations(headerText, dataBytes, Number(count), Number(seed));
for (const [i, mutation] of mutations.entries()) {
  process.stderr.write(`loading mutation ${i}: ${mutation.kind} ${mutation.what}\n`);
  await writeMutatedFile(target, mutation, dataBytes);
  let error: string | undefined;
  try {
    await NativeModel.load(workDir, { threads: 1 });
  } catch (caught) {
    error = (caught as Error).message;
  }
  process.stdout.write(`${JSON.stringify({ i, error })}\n`);
}
