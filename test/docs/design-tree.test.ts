// docs/design.md's "The tree" names the tree as it is. Every file of src/ (*.ts), native/ (*.cc, *.h,
// *.gypi, *.py, *.sh; not the shaders, not build outputs), bench/ (all of it), test/support/ and
// test/reference/ (their *.test.ts aside) is named there, by its file name in backticks, under the
// heading of its folder (`#### src/cli/`). And every source file the section names exists: a bare
// name is a file of its heading's folder, a name with a '/' a path from the repository's root. So a
// file cannot be added without its line, nor removed or renamed while the document still names it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository's root, from dist/test/docs/ once built. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A name in backticks that is a source file's. */
const SOURCE_FILE_NAME = /^[\w./-]+\.(?:ts|mjs|cc|h|gypi|py|sh)$/;

/** The folders whose files the section names, and which of their files (paths from the root) count. */
const DOCUMENTED_FOLDERS: readonly { folder: string; counts: (file: string) => boolean }[] = [
  { folder: 'src', counts: (file) => file.endsWith('.ts') },
  { folder: 'native', counts: (file) => /\.(?:cc|h|gypi|py|sh)$/.test(file) && !file.startsWith('native/vulkan/shaders/') },
  { folder: 'bench', counts: () => true },
  { folder: 'test/support', counts: (file) => !file.endsWith('.test.ts') },
  { folder: 'test/reference', counts: (file) => !file.endsWith('.test.ts') },
];

/** A heading of the section and the text up to the next heading; `folder` when the heading names one. */
interface TreeSection {
  heading: string;
  folder: string | undefined;
  text: string;
}

/** The files below `folder` (a path from the root), as '/'-separated paths from the root; build outputs left out. */
function filesBelow(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const file = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'build' ? [] : filesBelow(file);
    return [file];
  });
}

function documentedFiles(): string[] {
  return DOCUMENTED_FOLDERS.flatMap(({ folder, counts }) => filesBelow(folder).filter(counts)).sort();
}

/** "The tree" of a design document, cut at its headings. */
function treeSections(markdown: string): TreeSection[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf('## The tree');
  assert.notEqual(start, -1, 'docs/design.md has a "## The tree" section');
  const end = lines.findIndex((line, at) => at > start && line.startsWith('## '));
  const sections: TreeSection[] = [];
  for (const line of lines.slice(start, end === -1 ? undefined : end)) {
    const heading = /^#{2,6} +(.+?)\s*$/.exec(line);
    if (heading) {
      const folder = /^`?([\w./-]+)\/`?$/.exec(heading[1])?.[1];
      sections.push({ heading: heading[1], folder, text: '' });
    } else {
      sections[sections.length - 1].text += `${line}\n`;
    }
  }
  return sections;
}

function namesInBackticks(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]);
}

/** The files (paths from the root) that the section does not name under their folder's heading. */
function unnamedFiles(markdown: string, files: readonly string[]): string[] {
  const sections = treeSections(markdown);
  return files.filter((file) => {
    const section = sections.find((candidate) => candidate.folder === path.posix.dirname(file));
    return !section || !namesInBackticks(section.text).includes(path.posix.basename(file));
  });
}

/** The source file names in the section that name no file, each with the heading it is under. */
function namesOfNoFile(markdown: string, exists: (file: string) => boolean): string[] {
  return treeSections(markdown).flatMap(({ heading, folder, text }) =>
    namesInBackticks(text)
      .filter((name) => SOURCE_FILE_NAME.test(name))
      .filter((name) => !exists(name.includes('/') || folder === undefined ? name : `${folder}/${name}`))
      .map((name) => `${name} (under "${heading}")`),
  );
}

const designMarkdown = (): string => readFileSync(path.join(ROOT, 'docs/design.md'), 'utf8');

test('every file of src/, native/, bench/, test/support/ and test/reference/ is named under the heading of its folder', () => {
  const files = documentedFiles();
  assert.ok(files.includes('src/cli/main.ts') && files.includes('native/sources.gypi'), 'the walk finds the tree');
  assert.deepEqual(unnamedFiles(designMarkdown(), files), []);
});

test('every source file the tree section names exists', () => {
  assert.deepEqual(namesOfNoFile(designMarkdown(), (file) => existsSync(path.join(ROOT, file))), []);
});

test("a file named only under another folder's heading counts as unnamed", () => {
  const markdown = ['## The tree', '#### src/cli/', '| `main.ts` | the command |', '#### bench/engine/', '`stats.ts`'].join('\n');
  assert.deepEqual(unnamedFiles(markdown, ['src/cli/main.ts', 'bench/engine/main.ts', 'src/cli/stats.ts']), [
    'bench/engine/main.ts',
    'src/cli/stats.ts',
  ]);
});

test("a bare name is looked for in its heading's folder, a name with a slash from the root, and nothing after the section", () => {
  const markdown = [
    '## The tree',
    '### native/',
    '`addon.cc`, `native/sources.gypi`, `binding.gyp`',
    '#### native/cpu/',
    '`ops.h` and `kernels_<set>.cc`',
    '## After',
    '`gone.ts`',
  ].join('\n');
  const looked: string[] = [];
  const missing = namesOfNoFile(markdown, (file) => {
    looked.push(file);
    return file !== 'native/cpu/ops.h';
  });
  assert.deepEqual(looked, ['native/addon.cc', 'native/sources.gypi', 'native/cpu/ops.h']);
  assert.deepEqual(missing, ['ops.h (under "native/cpu/")']);
});
