// Archive formats by content, never by file name: a zip local file header, or a POSIX/GNU tar header
// (its 'ustar' magic at offset 257), plain or inside gzip. Anything else is a document of its own.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

export type ArchiveKind = 'zip' | 'tar' | 'tar.gz';

/** A tar header block: the magic lies within it. */
const TAR_HEADER_BYTES = 512;
const USTAR_MAGIC_OFFSET = 257;

export async function detectArchiveKind(filePath: string): Promise<ArchiveKind | undefined> {
  const head = await readHead(filePath, TAR_HEADER_BYTES);
  if (head.toString('latin1', 0, 4) === 'PK\x03\x04') return 'zip';
  if (hasUstarMagic(head)) return 'tar';
  if (head[0] === 0x1f && head[1] === 0x8b && hasUstarMagic(await gunzippedHead(filePath, TAR_HEADER_BYTES))) return 'tar.gz';
  return undefined;
}

function hasUstarMagic(head: Buffer): boolean {
  return head.toString('latin1', USTAR_MAGIC_OFFSET, USTAR_MAGIC_OFFSET + 5) === 'ustar';
}

async function readHead(filePath: string, length: number): Promise<Buffer> {
  const file = await open(filePath, 'r');
  try {
    const { buffer, bytesRead } = await file.read({ buffer: Buffer.alloc(length), position: 0 });
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/**
 * The first `length` decompressed bytes of a gzip file, decompressing no further than needed; fewer
 * (down to none) when the file is shorter or stops being valid gzip before that.
 */
async function gunzippedHead(filePath: string, length: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let collected = 0;
  try {
    await pipeline(createReadStream(filePath), createGunzip(), async (decompressed: AsyncIterable<Buffer>) => {
      for await (const chunk of decompressed) {
        chunks.push(chunk);
        collected += chunk.length;
        if (collected >= length) return;
      }
    });
  } catch {
    // Not gzip after all, or damaged: judged by what did decompress.
  }
  return Buffer.concat(chunks).subarray(0, length);
}
