// Streaming writer of sharded safetensors checkpoints in the Hugging Face layout:
//   model-00001-of-000001.safetensors … (shard index 5 digits, shard count 6, as the real repos name them)
//   model.safetensors.index.json  {"metadata": {"total_size": tensor bytes}, "weight_map": {name: file}}
// Shard file: u64 little-endian header length N, N bytes of JSON padded with spaces to a multiple of 8
// ({"__metadata__": {"format": "pt"}, name: {dtype, shape, data_offsets: [begin, end]}} with offsets
// relative to the data section), then the tensors' bytes back to back in name order.
// Tensor data is produced and written in bounded chunks, never a whole tensor at once.

import { open, writeFile } from 'node:fs/promises';
import { endianness } from 'node:os';
import { join } from 'node:path';

export type WrittenDType = 'BF16' | 'F16' | 'F32' | 'I64';

export interface TensorToWrite {
  name: string;
  dtype: WrittenDType;
  shape: readonly number[];
  /** Starts the tensor's data: the returned function fills each next chunk of its little-endian bytes. */
  openData(): (chunk: Uint8Array) => void;
}

export interface SafetensorsWriteOptions {
  /** Largest shard data size; a tensor larger than this gets a shard of its own. Default: one shard. */
  maxShardBytes?: number;
  /** Bytes produced and written per step (a multiple of 8). Default 4 MiB. */
  chunkBytes?: number;
  /** Called as each chunk is handed to the file system, with the file bytes so far and the total. */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

export interface WrittenSafetensors {
  /** Paths (`dir` joined with the file name) of the shards, then of the index. */
  files: string[];
  /** Sum of the shard file sizes (headers included). */
  bytes: number;
}

export const INDEX_FILE = 'model.safetensors.index.json';
export const DTYPE_BYTES: Record<WrittenDType, number> = { BF16: 2, F16: 2, F32: 4, I64: 8 };

interface SizedTensor {
  tensor: TensorToWrite;
  bytes: number;
}

interface PlannedShard {
  file: string;
  header: Buffer; // u64 length + padded JSON
  tensors: SizedTensor[];
  dataBytes: number;
}

/** Writes `tensors` as safetensors shards plus the index into `dir` (which must exist). */
export async function writeSafetensorsCheckpoint(
  dir: string,
  tensors: readonly TensorToWrite[],
  options: SafetensorsWriteOptions = {},
): Promise<WrittenSafetensors> {
  if (endianness() !== 'LE') throw new Error('safetensors data is little-endian; this host is big-endian');
  const chunkBytes = options.chunkBytes ?? 4 << 20;
  if (chunkBytes <= 0 || chunkBytes % 8 !== 0) throw new Error(`chunkBytes must be a positive multiple of 8, got ${chunkBytes}`);
  const shards = planShards(tensors, options.maxShardBytes ?? Infinity);
  const bytesTotal = shards.reduce((sum, s) => sum + s.header.length + s.dataBytes, 0);
  const buffers = [new Uint8Array(chunkBytes), new Uint8Array(chunkBytes)];
  let bytesDone = 0;
  for (const shard of shards) {
    const file = await open(join(dir, shard.file), 'w');
    let pendingWrite: Promise<unknown> = Promise.resolve();
    try {
      await file.write(shard.header, 0, shard.header.length, 0);
      bytesDone += shard.header.length;
      let position = shard.header.length;
      let turn = 0;
      // Double buffering: the next chunk is generated while the previous one is being written.
      for (const { tensor, bytes } of shard.tensors) {
        const fill = tensor.openData();
        for (let offset = 0; offset < bytes; offset += chunkBytes) {
          const chunk = buffers[turn++ & 1].subarray(0, Math.min(chunkBytes, bytes - offset));
          fill(chunk);
          await pendingWrite;
          pendingWrite = file.write(chunk, 0, chunk.length, position);
          position += chunk.length;
          bytesDone += chunk.length;
          options.onProgress?.(bytesDone, bytesTotal);
        }
      }
      await pendingWrite;
    } finally {
      await pendingWrite.catch(() => undefined); // settle the in-flight write before closing; the first error wins
      await file.close();
    }
  }
  const totalSize = shards.reduce((sum, s) => sum + s.dataBytes, 0);
  const weightMap = Object.fromEntries(shards.flatMap((s) => s.tensors.map(({ tensor }) => [tensor.name, s.file])));
  const index = { metadata: { total_size: totalSize }, weight_map: weightMap };
  await writeFile(join(dir, INDEX_FILE), JSON.stringify(index, null, 2) + '\n');
  return { files: [...shards.map((s) => join(dir, s.file)), join(dir, INDEX_FILE)], bytes: bytesTotal };
}

/** Sorts tensors by name and packs them, in that order, into shards of at most `maxShardBytes` data. */
function planShards(tensors: readonly TensorToWrite[], maxShardBytes: number): PlannedShard[] {
  const sorted = [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  sorted.forEach((t, i) => {
    if (i > 0 && t.name === sorted[i - 1].name) throw new Error(`tensor ${t.name} is listed twice`);
  });
  const groups: SizedTensor[][] = [];
  let current: SizedTensor[] = [];
  let currentBytes = 0;
  for (const tensor of sorted) {
    const bytes = tensor.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[tensor.dtype];
    if (current.length > 0 && currentBytes + bytes > maxShardBytes) {
      groups.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push({ tensor, bytes });
    currentBytes += bytes;
  }
  if (current.length > 0) groups.push(current);
  return groups.map((group, i) => ({
    file: shardFileName(i + 1, groups.length),
    header: shardHeader(group),
    tensors: group,
    dataBytes: group.reduce((sum, t) => sum + t.bytes, 0),
  }));
}

/** `model-00001-of-000001.safetensors`: 5-digit index, 6-digit count, as in the real repositories. */
function shardFileName(index: number, count: number): string {
  return `model-${String(index).padStart(5, '0')}-of-${String(count).padStart(6, '0')}.safetensors`;
}

function shardHeader(group: SizedTensor[]): Buffer {
  const entries: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const { tensor, bytes } of group) {
    entries[tensor.name] = { dtype: tensor.dtype, shape: tensor.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(entries), 'utf8');
  const padded = Buffer.alloc(json.length + ((8 - (json.length % 8)) % 8), ' ');
  json.copy(padded);
  const header = Buffer.alloc(8 + padded.length);
  header.writeBigUInt64LE(BigInt(padded.length), 0);
  padded.copy(header, 8);
  return header;
}
