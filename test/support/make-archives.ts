// Test archives made on the fly. Node has no zip writer, so zipArchive writes the format by hand
// (local headers, data stored or deflated, central directory, end record); it can also forge what an
// attacker would: unsafe names, Unix file types such as symbolic links, sizes that lie. Tar archives
// come from tar-stream's packer, gzip-compressed on request.
import { deflateRawSync, gzipSync } from 'node:zlib';

import tar from 'tar-stream';

export interface ZipEntrySpec {
  /** Written as given: '../evil.pdf' and '/abs.png' are allowed. A name ending in '/' is a directory. */
  name: string;
  /** Default: empty. */
  data?: Buffer;
  /** Default 'deflate'. */
  method?: 'store' | 'deflate';
  /** st_mode in the external attributes, made by Unix: 0o120777 is a symbolic link. Default 0o100644 (regular file). */
  unixMode?: number;
  /** Uncompressed size written to the headers in place of the real one, as a lying zip bomb would. */
  declaredSize?: number;
}

const UNIX_REGULAR_FILE = 0o100644;
const UNIX_DIRECTORY = 0o040755;
/** Version 2.0 (deflate); made by host 3, Unix. */
const VERSION = 20;
const MADE_BY_UNIX = (3 << 8) | VERSION;
/** General purpose flag bit 11: the name is UTF-8. */
const UTF8_NAME = 0x0800;
/** 1980-01-01 00:00, the first MS-DOS date. */
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

export function zipArchive(entries: ZipEntrySpec[]): Buffer {
  const localParts: Buffer[] = [];
  const centralParts: Buffer[] = [];
  let offset = 0;
  for (const spec of entries) {
    const data = spec.data ?? Buffer.alloc(0);
    const method = spec.method === 'store' ? 0 : 8;
    const stored = method === 0 ? data : deflateRawSync(data);
    const name = Buffer.from(spec.name, 'utf8');
    const mode = spec.unixMode ?? (spec.name.endsWith('/') ? UNIX_DIRECTORY : UNIX_REGULAR_FILE);
    const sizes = { crc: crc32(data), compressed: stored.length, uncompressed: spec.declaredSize ?? data.length };

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(VERSION, 4);
    local.writeUInt16LE(UTF8_NAME, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(sizes.crc, 14);
    local.writeUInt32LE(sizes.compressed, 18);
    local.writeUInt32LE(sizes.uncompressed, 22);
    local.writeUInt16LE(name.length, 26);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(MADE_BY_UNIX, 4);
    central.writeUInt16LE(VERSION, 6);
    central.writeUInt16LE(UTF8_NAME, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(sizes.crc, 16);
    central.writeUInt32LE(sizes.compressed, 20);
    central.writeUInt32LE(sizes.uncompressed, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);

    localParts.push(local, name, stored);
    centralParts.push(central, name);
    offset += local.length + name.length + stored.length;
  }
  const centralDirectory = Buffer.concat(centralParts);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralDirectory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...localParts, centralDirectory, end]);
}

const CRC32_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let bit = 0; bit < 8; bit++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE 802.3, reflected, as zip and gzip use it). */
export function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export interface TarEntrySpec {
  name: string;
  /** Default: empty. */
  data?: Buffer;
  /** Default 'file'. */
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  /** Target of a symlink or hard link. */
  linkname?: string;
}

export async function tarArchive(entries: TarEntrySpec[], options: { gzip?: boolean } = {}): Promise<Buffer> {
  const pack = tar.pack();
  for (const { name, data, type = 'file', linkname } of entries) {
    pack.entry({ name, type, linkname, mode: type === 'directory' ? 0o755 : 0o644 }, data ?? Buffer.alloc(0));
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  const archive = Buffer.concat(chunks);
  return options.gzip ? gzipSync(archive) : archive;
}
