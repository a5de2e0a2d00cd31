// `scriptorium results DOCID|INPUT`: an assembled document's markdown, JSON, HTML or searchable PDF
// from the storage, found by its docId or by the input it was read from (through the run manifests).
import path from 'node:path';

import { documentResultKeys, isDocId } from '../jobs/storage-layout.js';
import { documentHtml } from '../output/document-html.js';
import { docIdOfInput } from '../producer/run-manifest.js';
import { searchablePdf, TEXT_LAYERS } from '../output/searchable-pdf.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { choice, text } from './options.js';
import { UsageError } from './usage.js';

const USAGE = `Usage: scriptorium results DOCID|INPUT [--storage URL] [--format md|json|html|pdf] [--text-layer keep|add]

Prints an assembled document's results (its _DONE marker exists, or _FAILED_PAGES when pages failed:
they are then noted in the output, and \`scriptorium retry\` reads them again):
  md    results/DOCID/document.md (default)
  json  results/DOCID/document.json
  html  one HTML page of the whole document
  pdf   a searchable PDF: the original PDF's pages (an image document's images as pages) with the
        text laid invisibly over them at the recognised boxes, in any script (binary: redirect it to
        a file)
DOCID is printed by \`scriptorium enqueue\` and \`scriptorium run\`; INPUT is a file path or s3:// URI as it
was given to them (the newest run manifest in the storage that names it gives its DOCID).

  --storage URL     ${STORAGE_URL_USAGE}
  --text-layer L    with --format pdf, for pages of the original PDF that already have text of their
                    own: keep (default) lays no second text layer over them, add lays the reading over
                    them as well (their text is then found twice)`;

const FORMATS = ['md', 'json', 'html', 'pdf'] as const;

const OPTIONS = { storage: text(), format: choice(FORMATS).default('md'), 'text-layer': choice(TEXT_LAYERS) };

export const resultsCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'DOCID or INPUT', min: 1, max: 1 }, run: printResults });

async function printResults({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { format, 'text-layer': textLayer } = values;
  if (textLayer !== undefined && format !== 'pdf') throw new UsageError(`--text-layer applies to --format pdf only (got --format ${format})`);
  const storage = openCommandStorage(values.storage);
  const docId = await docIdOf(positionals[0], storage);
  const keys = documentResultKeys(docId);
  const [done, failedPages] = await Promise.all([storage.exists(keys.done), storage.exists(keys.failedPages)]);
  if (!done && !failedPages) {
    throw new StorageError(
      'not_found',
      `document ${docId} is not finished in ${storage.url}: there is no ${keys.done} nor ${keys.failedPages}; check the DOCID and --storage, or see \`scriptorium status\``,
    );
  }
  if (format === 'html') process.stdout.write(await documentHtml(docId, storage));
  else if (format === 'pdf') process.stdout.write(await searchablePdf(docId, storage, { textLayer }));
  else process.stdout.write(await storage.get(format === 'md' ? keys.markdown : keys.json));
  return 0;
}

/** The argument itself when it is a docId; else the docId the run manifests give that input. */
async function docIdOf(argument: string, storage: Storage): Promise<string> {
  if (isDocId(argument)) return argument;
  const uri = /^s3:\/\//i.test(argument) ? argument : path.resolve(argument);
  const docId = await docIdOfInput(uri, storage);
  if (docId === undefined) {
    throw new UsageError(`"${argument}" is no DOCID, and no run manifest in ${storage.url} names ${uri}: check --storage`);
  }
  return docId;
}
