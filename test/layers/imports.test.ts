// The layers of src/ (docs/design.md "Layers"), read from the import statements of every source file:
// no two modules import each other, directly or around a loop, and each folder imports only the
// folders its row below allows. A new import across folders must fit the table, or the table must
// change on purpose. The picture of the layers in docs/design.md draws every folder above each folder
// the table lets it import.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository's src/ and docs/design.md, from dist/test/layers/ once built. */
const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
const DESIGN = fileURLToPath(new URL('../../../docs/design.md', import.meta.url));

/** What each folder of src/ may import besides itself. Imports point one way: down this table's layers. */
const ALLOWED_IMPORTS: Record<string, readonly string[]> = {
  // The command line: parses options, prints, sets exit codes; it alone may import everything.
  cli: ['server', 'watch', 'worker', 'producer', 'model', 'output', 'queue', 'jobs', 'engine', 'documents', 'storage', 'vocabulary'],
  // The API's client library: the API's types and the result JSON it returns.
  client: ['server', 'jobs'],
  server: ['worker', 'producer', 'output', 'queue', 'jobs', 'storage', 'vocabulary'],
  watch: ['producer', 'queue', 'jobs', 'storage'],
  // ocr-document.ts plans a document as the producer does, then reads it without a queue.
  worker: ['producer', 'output', 'queue', 'jobs', 'engine', 'documents', 'storage', 'vocabulary'],
  producer: ['queue', 'jobs', 'engine', 'documents', 'storage', 'vocabulary'],
  // Checkpoints: resolution, download, check, synthesis, debug dumps.
  model: ['engine', 'documents', 'storage', 'vocabulary'],
  // What is made from page results: document HTML, searchable PDFs, page crops, build info.
  output: ['jobs', 'engine', 'documents', 'storage'],
  queue: ['jobs', 'storage', 'vocabulary'],
  jobs: ['documents', 'storage', 'vocabulary'],
  // The engine knows no queue and no storage; the native addon it loads is no TypeScript import.
  engine: ['documents', 'vocabulary'],
  documents: [],
  storage: [],
  vocabulary: [],
};

/** The lines of the picture under "## Layers" in a design document: its first fenced block. */
function layersPicture(markdown: string): string[] {
  const section = markdown.slice(markdown.indexOf('## Layers\n'));
  const fenced = /```\n([\s\S]*?)```/.exec(section);
  assert.ok(markdown.includes('## Layers\n') && fenced, 'docs/design.md has a picture under "## Layers"');
  return fenced[1].split('\n');
}

/** The line of the picture each folder is drawn on (undefined for a folder drawn on no line or on several). */
function rowsOf(picture: readonly string[], folders: readonly string[]): Map<string, number | undefined> {
  return new Map(
    folders.map((folder) => {
      const word = new RegExp(`(?<![\\w/])${folder}(?![\\w/])`);
      const lines = picture.flatMap((line, at) => (word.test(line) ? [at] : []));
      return [folder, lines.length === 1 ? lines[0] : undefined];
    }),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

/**
 * The relative module specifiers a file imports: `import … from`, `import type … from`,
 * `export … from`, a bare `import '…'` and a dynamic `import('…')`, over several lines too.
 */
function relativeImports(source: string): string[] {
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s*['"](\.{1,2}\/[^'"]+)['"]/gm,
    /^\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/gm,
    /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]));
}

/** Every module of src/ (path relative to src/, with .ts) and the modules of src/ it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const imported = relativeImports(readFileSync(file, 'utf8')).map((specifier) =>
      path.relative(SRC, path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts'))),
    );
    graph.set(path.relative(SRC, file), [...new Set(imported)]);
  }
  return graph;
}

function folderOf(module: string): string {
  return module.split(path.sep)[0];
}

/** An import loop, as the modules around it, or undefined when there is none. */
function findLoop(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (module: string): string[] | undefined => {
    const at = onPath.indexOf(module);
    if (at !== -1) return [...onPath.slice(at), module];
    if (done.has(module) || !graph.has(module)) return undefined;
    onPath.push(module);
    for (const imported of graph.get(module)!) {
      const loop = visit(imported);
      if (loop) return loop;
    }
    onPath.pop();
    done.add(module);
    return undefined;
  };
  for (const module of graph.keys()) {
    const loop = visit(module);
    if (loop) return loop;
  }
  return undefined;
}

test('the import reader sees every form of import, across lines too', () => {
  const source = [
    "import { a } from './a.js';",
    "import type { B } from '../b/b.js';",
    'import {',
    '  c,',
    '  type C,',
    "} from './c.js';",
    "export { d } from './d.js';",
    "export * from '../e/e.js';",
    "import './f.js';",
    "const g = await import('./g.js');",
    "import { readFile } from 'node:fs/promises';",
  ].join('\n');
  assert.deepEqual(relativeImports(source).sort(), ['../b/b.js', '../e/e.js', './a.js', './c.js', './d.js', './f.js', './g.js']);
});

test('every import of src/ names a module that exists', () => {
  const graph = importGraph();
  const missing = [...graph].flatMap(([module, imported]) => imported.filter((target) => !graph.has(target)).map((target) => `${module} -> ${target}`));
  assert.deepEqual(missing, []);
});

test('no import loop between the modules of src/', () => {
  assert.equal(findLoop(importGraph())?.join(' -> '), undefined);
});

test('the loop finder finds a loop around three modules', () => {
  const graph = new Map([
    ['engine/a.ts', ['engine/b.ts']],
    ['engine/b.ts', ['engine/c.ts']],
    ['engine/c.ts', ['engine/a.ts']],
  ]);
  assert.deepEqual(findLoop(graph), ['engine/a.ts', 'engine/b.ts', 'engine/c.ts', 'engine/a.ts']);
});

test('every folder of src/ has its row in the layer table', () => {
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  assert.deepEqual(folders, Object.keys(ALLOWED_IMPORTS).sort());
});

test('each folder imports only the folders the layer table allows', () => {
  const forbidden = [...importGraph()].flatMap(([module, imported]) => {
    const from = folderOf(module);
    return imported
      .filter((target) => folderOf(target) !== from && !(ALLOWED_IMPORTS[from] ?? []).includes(folderOf(target)))
      .map((target) => `${module} -> ${target}`);
  });
  assert.deepEqual(forbidden, []);
});

test('the table keeps the rules: nothing imports cli; queue and jobs import no process; storage imports nothing', () => {
  for (const [folder, allowed] of Object.entries(ALLOWED_IMPORTS)) assert.ok(!allowed.includes('cli'), `${folder} may not import cli`);
  for (const folder of ['queue', 'jobs']) {
    for (const caller of ['cli', 'server', 'watch', 'worker', 'producer']) assert.ok(!ALLOWED_IMPORTS[folder].includes(caller), `${folder} may not import ${caller}`);
  }
  assert.deepEqual(ALLOWED_IMPORTS.storage, []);
  assert.deepEqual(ALLOWED_IMPORTS.engine, ['documents', 'vocabulary']);
});

test('the layers picture of docs/design.md draws each folder once, above every folder it may import', () => {
  const rows = rowsOf(layersPicture(readFileSync(DESIGN, 'utf8')), Object.keys(ALLOWED_IMPORTS));
  assert.deepEqual([...rows].filter(([, row]) => row === undefined).map(([folder]) => folder), [], 'folders drawn on no line or on several');
  const upward = Object.entries(ALLOWED_IMPORTS).flatMap(([folder, allowed]) =>
    allowed.filter((imported) => rows.get(imported)! <= rows.get(folder)!).map((imported) => `${folder} -> ${imported}`),
  );
  assert.deepEqual(upward, []);
});

test('the picture reader finds a folder on the one line it is drawn on, never inside another name', () => {
  const picture = ['client      worker', ' │', 'server ◄───┘', 'jobs · engine · worker ──► native addon'];
  assert.deepEqual(
    [...rowsOf(picture, ['cli', 'client', 'server', 'engine', 'worker'])],
    [
      ['cli', undefined],
      ['client', 0],
      ['server', 2],
      ['engine', 3],
      ['worker', undefined],
    ],
  );
});
