// `scriptorium results --format pdf`: a born-digital PDF keeps its own text as its only text layer
// unless --text-layer add lays the reading over it too; --text-layer is refused with other formats.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { pageResult, storeAssembledDocument } from '../support/stored-results.js';

const PDFTOTEXT_MISSING = spawnSync('pdftotext', ['-v']).error === undefined ? false : 'pdftotext is not installed (apt-get install poppler-utils)';
const CLI = path.resolve('dist/src/cli/main.js');
const DOC = 'f1'.repeat(16);

describe('scriptorium results --format pdf', { skip: PDFTOTEXT_MISSING }, () => {
  let dir: string;
  let root: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-results-'));
    root = path.join(dir, 'storage');
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    // makePdf draws its own lines of text: "Page 1, line 1: the quick brown fox …".
    await storeAssembledDocument(new FileStorage(root), DOC, 'pdf', await makePdf([LETTER], 1), pageResult(DOC, render, [{ type: 'text', text: 'Revenue grew', box: [144, 600, 700, 640] }]));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** The text pdftotext finds in the searchable PDF the command prints with these extra arguments. */
  async function searchableText(...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'results', DOC, '--storage', root, '--format', 'pdf', ...args], { encoding: 'buffer' });
    const file = path.join(dir, 'out.pdf');
    await writeFile(file, stdout);
    return execFileSync('pdftotext', [file, '-'], { encoding: 'utf8' });
  }

  test('by default a page with text of its own gets no second text layer; with --text-layer add it gets the reading too', async () => {
    const kept = await searchableText();
    assert.match(kept, /Page 1, line 1: the quick brown fox/);
    assert.doesNotMatch(kept, /Revenue/);
    const added = await searchableText('--text-layer', 'add');
    assert.match(added, /Page 1, line 1: the quick brown fox/);
    assert.match(added, /Revenue\s+grew/);
  });

  test('--text-layer is refused with another format, and with a mode it does not know', () => {
    const withMarkdown = spawnSync(process.execPath, [CLI, 'results', DOC, '--storage', root, '--text-layer', 'add'], { encoding: 'utf8' });
    assert.equal(withMarkdown.status, 2);
    assert.match(withMarkdown.stderr, /--text-layer applies to --format pdf only \(got --format md\)/);
    const replace = spawnSync(process.execPath, [CLI, 'results', DOC, '--storage', root, '--format', 'pdf', '--text-layer', 'replace'], { encoding: 'utf8' });
    assert.equal(replace.status, 2);
    assert.match(replace.stderr, /--text-layer must be one of keep, add \(got "replace"\)/);
  });
});
