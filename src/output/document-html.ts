// HTML export of an assembled document: one self-contained page, each document page in the same
// side-by-side view as the viewer's (page-view.ts): the page image, embedded as a JPEG data: URI at a
// moderate resolution, with the grounding boxes over it, beside the page's reading. It carries no
// script; its only style is the page view's, inlined. A page whose image cannot be rendered (the
// staged source was removed, or it is an encrypted PDF) is shown without it.
import { DocumentError } from '../documents/document.js';
import { parseDocumentResultJson, parsePageResultJson } from '../jobs/result-json.js';
import { documentKeys, documentResultKeys, pageResultKey } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { pageImageJpeg } from './page-image.js';
import { pageViewCss, pageViewHtml } from './page-view.js';
import { escapeHtml } from './safe-markdown.js';

/** Pixels on the longer side of the embedded page images. */
export const EXPORT_IMAGE_LONGEST_SIDE = 1000;

export async function documentHtml(docId: string, storage: Storage): Promise<string> {
  const jsonKey = documentResultKeys(docId).json;
  const document = parseDocumentResultJson((await storage.get(jsonKey)).toString('utf8'), jsonKey);
  const failed = new Map(document.failedPages.map(({ page, reason }) => [page, reason]));
  const source = await stagedSource(storage, documentKeys(docId, document.source.type).source);
  const sections: string[] = [];
  for (let page = 1; page <= document.source.pages; page++) {
    const failure = failed.get(page);
    const key = pageResultKey(docId, page, 'json');
    const result = failure === undefined ? parsePageResultJson((await storage.get(key)).toString('utf8'), key) : undefined;
    const jpeg = source === undefined ? undefined : await pageJpegOrNone(source, document.source.type, page);
    const imageSrc = jpeg === undefined ? undefined : `data:image/jpeg;base64,${jpeg.toString('base64')}`;
    sections.push(pageViewHtml({ page, result, failure, imageSrc }));
  }
  const title = escapeHtml(document.source.uri);
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>${title}</title>
<meta name="generator" content="Scriptorium ${escapeHtml(document.scriptorium.version)} (${escapeHtml(document.scriptorium.commit)})">
<style>body{font-family:sans-serif;margin:1em 2em}
${await pageViewCss()}</style>
</head>
<body>
<h1>${title}</h1>
${sections.join('\n')}
</body>
</html>
`;
}

async function stagedSource(storage: Storage, key: string): Promise<Buffer | undefined> {
  try {
    return await storage.get(key);
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return undefined;
    throw error;
  }
}

async function pageJpegOrNone(source: Buffer, type: Parameters<typeof pageImageJpeg>[1], page: number): Promise<Buffer | undefined> {
  try {
    return await pageImageJpeg(source, type, page, EXPORT_IMAGE_LONGEST_SIDE);
  } catch (error) {
    if (error instanceof DocumentError) return undefined;
    throw error;
  }
}
