// `scriptorium results DOCID`: a finished document's markdown or JSON from the storage.
import { documentResultKeys } from '../jobs/storage-layout.js';
import { StorageError } from '../storage/storage.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { choiceOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium results DOCID [--storage URL] [--format md|json]

Prints results/DOCID/document.md (default) or document.json once the document is assembled (its
_DONE marker exists, or _FAILED_PAGES when pages failed: they are then noted in the markdown and
listed in the JSON, and \`scriptorium retry\` reads them again). DOCID is printed by
\`scriptorium enqueue\` and \`scriptorium run\`.

  --storage URL     ${STORAGE_URL_USAGE}`;

export async function runResultsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { storage: { type: 'string' }, format: { type: 'string', default: 'md' } }, USAGE);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('give exactly one DOCID', USAGE);
  const format = choiceOption(values.format, 'format', ['md', 'json'] as const, USAGE);
  const docId = positionals[0];
  let keys;
  try {
    keys = documentResultKeys(docId);
  } catch (error) {
    throw new UsageError((error as Error).message, USAGE);
  }
  const storage = openCommandStorage(values.storage);
  const [done, failedPages] = await Promise.all([storage.exists(keys.done), storage.exists(keys.failedPages)]);
  if (!done && !failedPages) {
    throw new StorageError(
      'not_found',
      `document ${docId} is not finished in ${storage.url}: there is no ${keys.done} nor ${keys.failedPages}; check the DOCID and --storage, or see \`scriptorium status\``,
    );
  }
  process.stdout.write(await storage.get(format === 'md' ? keys.markdown : keys.json));
  return 0;
}
