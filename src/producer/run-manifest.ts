// The manifest of one `enqueue` or `run`: every input's uri with its docId, what happened to it and
// where its results are (or why it was rejected), at manifests/<time>-<id>.json in the storage. It is
// how results are found from their inputs: `scriptorium results INPUT` looks the input up in them.
import { randomBytes } from 'node:crypto';

import { documentResultKeys, MANIFESTS_FOLDER, pageResultsFolder, runManifestKey } from '../jobs/storage-layout.js';
import type { EnqueueSummary } from './enqueue.js';
import type { Storage } from '../storage/storage.js';

export interface RunManifestJson {
  writtenAt: string;
  documents: {
    uri: string;
    docId: string;
    state: string;
    pages: number;
    results: { markdown: string; json: string; done: string; failedPages: string; pages: string };
  }[];
  rejected: { uri: string; reason: string }[];
}

/** Writes the manifest of `summary`; resolves with its key. */
export async function writeRunManifest(summary: EnqueueSummary, storage: Storage, now = new Date()): Promise<string> {
  const manifest: RunManifestJson = {
    writtenAt: now.toISOString(),
    documents: summary.queued.map(({ uri, docId, state, pages }) => ({
      uri,
      docId,
      state,
      pages,
      results: { ...documentResultKeys(docId), pages: pageResultsFolder(docId) },
    })),
    rejected: summary.rejected.map(({ uri, reason }) => ({ uri, reason })),
  };
  const key = runManifestKey(now, randomBytes(4).toString('hex'));
  await storage.put(key, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`), { contentType: 'application/json' });
  return key;
}

/** The docId the newest manifest gives the input `uri`; undefined when no manifest names it. */
export async function docIdOfInput(uri: string, storage: Storage): Promise<string | undefined> {
  const keys: string[] = [];
  for await (const object of storage.list(MANIFESTS_FOLDER)) keys.push(object.key);
  for (const key of keys.reverse()) {
    const manifest = JSON.parse((await storage.get(key)).toString('utf8')) as RunManifestJson;
    const found = manifest.documents.find((document) => document.uri === uri);
    if (found !== undefined) return found.docId;
  }
  return undefined;
}
