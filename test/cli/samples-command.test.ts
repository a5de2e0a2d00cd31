// `scriptorium samples` writes the mixed folder the README's main command reads.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { openDocument } from '../../src/documents/document.js';

test('samples writes a 2-page PDF, a PNG and a text file that is no document', async () => {
  const out = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-samples-'));
  try {
    await promisify(execFile)(process.execPath, [path.resolve('dist/src/cli/main.js'), 'samples', '--out', out]);
    assert.deepEqual(await openDocument(await readFile(path.join(out, 'report.pdf'))), { type: 'pdf', pageCount: 2 });
    assert.deepEqual(await openDocument(await readFile(path.join(out, 'scan.png'))), { type: 'png', pageCount: 1 });
    await assert.rejects(openDocument(await readFile(path.join(out, 'notes.txt'))), /not a supported document/);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
