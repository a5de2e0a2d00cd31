// In-memory safetensors encoding for small outputs (debug dumps): 8-byte little-endian header
// length, JSON header padded with spaces to a multiple of 8, then the tensors' bytes in order.

export type DumpDType = 'F32' | 'I32';

export interface DumpTensor {
  dtype: DumpDType;
  shape: number[];
  data: Float32Array | Int32Array;
}

export function encodeSafetensors(tensors: Record<string, DumpTensor>, metadata: Record<string, string>): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, tensor] of Object.entries(tensors)) {
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    if (count !== tensor.data.length) {
      throw new Error(`tensor ${name}: shape [${tensor.shape}] holds ${count} values but data has ${tensor.data.length}`);
    }
    header[name] = { dtype: tensor.dtype, shape: tensor.shape, data_offsets: [offset, offset + tensor.data.byteLength] };
    offset += tensor.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const out = Buffer.alloc(8 + headerBytes.length + offset);
  out.writeBigUInt64LE(BigInt(headerBytes.length), 0);
  headerBytes.copy(out, 8);
  let at = 8 + headerBytes.length;
  for (const tensor of Object.values(tensors)) {
    Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength).copy(out, at);
    at += tensor.data.byteLength;
  }
  return out;
}
