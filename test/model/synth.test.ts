// Synthetic checkpoints: configs, tensor manifests (docs/model.md §1, §3), safetensors layout and values.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { modelConfig } from '../../src/model/synth/model-configs.js';
import { bf16ToF32, f32ToBf16, f32ToF16, NormalBf16Stream } from '../../src/model/synth/random-weights.js';
import { INDEX_FILE } from '../../src/model/synth/safetensors-writer.js';
import { synthCheckpoint } from '../../src/model/synth/synth-checkpoint.js';
import { elementCount, tensorManifest, type TensorSpec } from '../../src/model/synth/tensor-manifest.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url)); // dist/test/model/ → repo root
const V3_CONFIG_FIXTURE = resolve(REPO_ROOT, '../shared/fixtures/unlimited-ocr/config.json');

const sumParameters = (specs: TensorSpec[]) => specs.reduce((sum, s) => sum + elementCount(s), 0);
const shapeOf = (specs: TensorSpec[], name: string) => specs.find((s) => s.name === name)?.shape;

describe('full-size tensor manifests (docs/model.md §3)', () => {
  const expected: Record<Variant, { tensors: number; parameters: number }> = {
    v1: { tensors: 2710, parameters: 3_336_106_240 },
    v2: { tensors: 2707, parameters: 3_389_119_360 },
    v3: { tensors: 2710, parameters: 3_336_106_240 },
  };
  for (const variant of ['v1', 'v2', 'v3'] as const) {
    test(`${variant} has ${expected[variant].tensors} tensors and ${expected[variant].parameters} parameters`, () => {
      const manifest = tensorManifest(modelConfig(variant, 'full'));
      assert.equal(manifest.length, expected[variant].tensors);
      assert.equal(sumParameters(manifest), expected[variant].parameters);
      assert.equal(new Set(manifest.map((s) => s.name)).size, manifest.length);
      assert.ok(manifest.every((s) => s.dtype === 'BF16'));
    });
  }

  test('component totals: decoder 2,934,734,080, SAM 95,569,152 (v2 94,979,328), CLIP 303,177,728, Qwen2 358,256,512', () => {
    const component = (specs: TensorSpec[], prefix: string) => sumParameters(specs.filter((s) => s.name.startsWith(prefix)));
    const isDecoder = (s: TensorSpec) => s.name === 'lm_head.weight' || s.name === 'model.embed_tokens.weight' ||
      s.name === 'model.norm.weight' || s.name.startsWith('model.layers.');
    const v1 = tensorManifest(modelConfig('v1', 'full'));
    const v2 = tensorManifest(modelConfig('v2', 'full'));
    assert.equal(sumParameters(v1.filter(isDecoder)), 2_934_734_080);
    assert.equal(sumParameters(v2.filter(isDecoder)), 2_934_734_080);
    assert.equal(component(v1, 'model.sam_model.'), 95_569_152);
    assert.equal(component(v2, 'model.sam_model.'), 94_979_328);
    assert.equal(component(v1, 'model.vision_model.'), 303_177_728);
    assert.equal(component(v2, 'model.qwen2_model.'), 358_256_512);
  });

  test('SAM rel_pos tables have 2·14−1 = 27 rows in windowed blocks and 2·64−1 = 127 in global blocks', () => {
    const v1 = tensorManifest(modelConfig('v1', 'full'));
    for (let block = 0; block < 12; block++) {
      const rows = [2, 5, 8, 11].includes(block) ? 127 : 27;
      assert.deepEqual(shapeOf(v1, `model.sam_model.blocks.${block}.attn.rel_pos_h`), [rows, 64]);
      assert.deepEqual(shapeOf(v1, `model.sam_model.blocks.${block}.attn.rel_pos_w`), [rows, 64]);
    }
  });

  test('v2 net_3 outputs the Qwen2 dim 896 although its config lists 1024', () => {
    const config = modelConfig('v2', 'full');
    assert.deepEqual(config.vision_config.width.sam_vit_b.downsample_channels, [512, 1024]);
    assert.deepEqual(shapeOf(tensorManifest(config), 'model.sam_model.net_3.weight'), [896, 512, 3, 3]);
  });

  test('tiny v2 likewise: config lists net_3 width 256, net_3 outputs the Qwen2 dim 128', () => {
    const config = modelConfig('v2', 'tiny');
    assert.deepEqual(config.vision_config.width.sam_vit_b.downsample_channels, [64, 256]);
    assert.deepEqual(shapeOf(tensorManifest(config), 'model.sam_model.net_3.weight'), [128, 64, 3, 3]);
  });

  test('tiny SAM keeps the real geometry: rel_pos 27 rows in windowed blocks 0 and 2, 127 in global blocks 1 and 3', () => {
    const tiny = tensorManifest(modelConfig('v1', 'tiny'));
    for (const [block, rows] of [[0, 27], [1, 127], [2, 27], [3, 127]]) {
      assert.deepEqual(shapeOf(tiny, `model.sam_model.blocks.${block}.attn.rel_pos_h`), [rows, 32]);
    }
    assert.deepEqual(shapeOf(tiny, 'model.sam_model.pos_embed'), [1, 64, 64, 96]);
  });

  test('v2 queries are [144, 896] and [256, 896]; projector [1280, 896]; no image_newline', () => {
    const v2 = tensorManifest(modelConfig('v2', 'full'));
    assert.deepEqual(shapeOf(v2, 'model.qwen2_model.query_768.weight'), [144, 896]);
    assert.deepEqual(shapeOf(v2, 'model.qwen2_model.query_1024.weight'), [256, 896]);
    assert.deepEqual(shapeOf(v2, 'model.projector.layers.weight'), [1280, 896]);
    assert.equal(shapeOf(v2, 'model.image_newline'), undefined);
    assert.deepEqual(shapeOf(v2, 'model.view_seperator'), [1280]);
  });

  test('v1 projector is [1280, 2048] and image_newline [1280]', () => {
    const v1 = tensorManifest(modelConfig('v1', 'full'));
    assert.deepEqual(shapeOf(v1, 'model.projector.layers.weight'), [1280, 2048]);
    assert.deepEqual(shapeOf(v1, 'model.image_newline'), [1280]);
  });
});

describe('model configs (docs/model.md §1)', () => {
  test('v3 full config.json is byte-identical to the published one', { skip: !existsSync(V3_CONFIG_FIXTURE) }, async () => {
    assert.equal(JSON.stringify(modelConfig('v3', 'full'), null, 2), await readFile(V3_CONFIG_FIXTURE, 'utf8'));
  });

  test('v1 and v2 full configs carry their architecture, model_type, v_head_dim 0 and 8192 positions', () => {
    for (const [variant, architecture] of [['v1', 'DeepseekOCRForCausalLM'], ['v2', 'DeepseekOCR2ForCausalLM']] as const) {
      const config = modelConfig(variant, 'full');
      assert.deepEqual(config.architectures, [architecture]);
      assert.equal(config.model_type, 'deepseek_vl_v2');
      assert.equal(config.v_head_dim, 0);
      assert.equal(config.language_config.v_head_dim, 0);
      assert.equal(config.max_position_embeddings, 8192);
      assert.equal('sliding_window' in config || 'sliding_window_size' in config, false);
    }
    assert.equal(modelConfig('v1', 'full').projector_config.input_dim, 2048);
    assert.equal(modelConfig('v2', 'full').projector_config.input_dim, 896);
    assert.deepEqual(modelConfig('v2', 'full').vision_config.width['qwen2-0-5b'], { dim: 896 });
  });

  test('tiny configs keep the real vocabulary (129280 rows) and the decoder keys of the full configs', () => {
    for (const variant of ['v1', 'v2', 'v3'] as const) {
      const tiny = modelConfig(variant, 'tiny');
      const full = modelConfig(variant, 'full');
      assert.equal(tiny.vocab_size, 129280);
      assert.deepEqual(Object.keys(tiny), Object.keys(full));
      assert.deepEqual(Object.keys(tiny.language_config), Object.keys(full.language_config));
      assert.deepEqual(
        [tiny.hidden_size, tiny.num_attention_heads, tiny.num_key_value_heads, tiny.num_hidden_layers, tiny.first_k_dense_replace],
        [256, 2, 2, 3, 1],
      );
      assert.deepEqual(
        [tiny.intermediate_size, tiny.moe_intermediate_size, tiny.n_routed_experts, tiny.num_experts_per_tok, tiny.n_shared_experts],
        [512, 64, 8, 2, 1],
      );
    }
  });

  test('tiny v1/v3: net_3 width = CLIP width and projector input = CLIP width + net_3 width', () => {
    for (const variant of ['v1', 'v3'] as const) {
      const config = modelConfig(variant, 'tiny');
      const clip = config.vision_config.width['clip-l-14-224'];
      const net3 = config.vision_config.width.sam_vit_b.downsample_channels[1];
      assert.equal(net3, clip?.width);
      assert.equal(config.projector_config.input_dim, 2 * net3);
    }
  });

  test('tiny SAM global blocks lie within its layers', () => {
    const sam = modelConfig('v1', 'tiny').vision_config.width.sam_vit_b;
    assert.ok(sam.global_attn_indexes.every((i) => i >= 0 && i < sam.layers));
  });
});

describe('F32 → BF16 conversion', () => {
  const cases: [string, number, number][] = [
    ['1.0 is exact', 1, 0x3f80],
    ['−2.5 is exact', -2.5, 0xc020],
    ['−0 keeps its sign', -0, 0x8000],
    ['halfway 1 + 2⁻⁸ rounds down to the even 1.0', 1 + 2 ** -8, 0x3f80],
    ['halfway 1 + 3·2⁻⁸ rounds up to the even 1 + 2⁻⁶', 1 + 3 * 2 ** -8, 0x3f82],
    ['just above halfway rounds up', 1 + 2 ** -8 + 2 ** -20, 0x3f81],
    ['just below halfway rounds down', 1 + 2 ** -8 - 2 ** -20, 0x3f80],
    ['the largest F32 rounds to +∞', 3.4028234663852886e38, 0x7f80],
    ['+∞ stays +∞', Infinity, 0x7f80],
    ['−∞ stays −∞', -Infinity, 0xff80],
    ['the smallest subnormal rounds to +0', 2 ** -149, 0x0000],
  ];
  for (const [behaviour, input, bits] of cases) {
    test(behaviour, () => assert.equal(f32ToBf16(input).toString(16), bits.toString(16)));
  }
  test('NaN stays NaN', () => assert.ok(Number.isNaN(bf16ToF32(f32ToBf16(NaN)))));
});

describe('F32 → F16 conversion (F16 synthetic checkpoints)', () => {
  const cases: [string, number, number][] = [
    ['1.0 is exact', 1, 0x3c00],
    ['−2.5 is exact', -2.5, 0xc100],
    ['the largest F16 is exact', 65504, 0x7bff],
    ['halfway past the largest F16 rounds to +∞', 65520, 0x7c00],
    ['just below that halfway rounds down', 65519, 0x7bff],
    ['halfway 1 + 2⁻¹¹ rounds down to the even 1.0', 1 + 2 ** -11, 0x3c00],
    ['halfway 1 + 3·2⁻¹¹ rounds up to the even 1 + 2⁻⁹', 1 + 3 * 2 ** -11, 0x3c02],
    ['the smallest normal 2⁻¹⁴ is exact', 2 ** -14, 0x0400],
    ['the smallest subnormal 2⁻²⁴ is exact', 2 ** -24, 0x0001],
    ['halfway to it, 2⁻²⁵, rounds to the even +0', 2 ** -25, 0x0000],
    ['3·2⁻²⁵ rounds up to the even 2⁻²³', 3 * 2 ** -25, 0x0002],
    ['a subnormal from the subnormal/normal edge rounds into the normals', 2 ** -14 - 2 ** -26, 0x0400],
    ['−∞ stays −∞', -Infinity, 0xfc00],
  ];
  for (const [behaviour, input, bits] of cases) {
    test(behaviour, () => assert.equal(f32ToF16(input).toString(16), bits.toString(16)));
  }
  test('NaN stays NaN', () => assert.equal(f32ToF16(NaN) & 0x7e00, 0x7e00));
});

describe('random BF16 streams', () => {
  const init = { mean: 0, std: 1 };
  const draw = (seed: number, name: string, chunks: number[]) => {
    const stream = new NormalBf16Stream(seed, name, init);
    const parts = chunks.map((n) => {
      const out = new Uint16Array(n);
      stream.fill(out);
      return [...out];
    });
    return parts.flat();
  };

  test('the same seed and name give the same values, however they are chunked', () => {
    assert.deepEqual(draw(7, 'a', [1000]), draw(7, 'a', [3, 1, 500, 495, 1]));
  });

  test('another seed or another tensor name gives other values', () => {
    assert.notDeepEqual(draw(7, 'a', [64]), draw(8, 'a', [64]));
    assert.notDeepEqual(draw(7, 'a', [64]), draw(7, 'b', [64]));
  });

  test('values follow N(mean, std²)', () => {
    const values = new Uint16Array(1 << 20);
    new NormalBf16Stream(3, 'x', { mean: 1, std: 0.1 }).fill(values);
    const { mean, std } = moments(values);
    assert.ok(Math.abs(mean - 1) < 1e-3, `mean ${mean}`);
    assert.ok(Math.abs(std / 0.1 - 1) < 0.01, `std ${std}`);
  });
});

describe('tiny checkpoints on disk', () => {
  let root: string;
  const dirs = {} as Record<'v1' | 'v2Sharded' | 'v3' | 'v1Again' | 'v1OtherSeed', string>;
  const progress: [number, number][] = [];
  const SHARD_LIMIT = 48 << 20;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'synth-test-'));
    for (const key of Object.keys({ v1: 0, v2Sharded: 0, v3: 0, v1Again: 0, v1OtherSeed: 0 }) as (keyof typeof dirs)[]) {
      dirs[key] = join(root, key);
    }
    await synthCheckpoint({ variant: 'v1', size: 'tiny', outDir: dirs.v1, seed: 1, onProgress: (d, t) => progress.push([d, t]) });
    await synthCheckpoint({ variant: 'v2', size: 'tiny', outDir: dirs.v2Sharded, seed: 1, maxShardBytes: SHARD_LIMIT });
    await synthCheckpoint({ variant: 'v3', size: 'tiny', outDir: dirs.v3, seed: 1 });
    await synthCheckpoint({ variant: 'v1', size: 'tiny', outDir: dirs.v1Again, seed: 1 });
    await synthCheckpoint({ variant: 'v1', size: 'tiny', outDir: dirs.v1OtherSeed, seed: 2 });
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  for (const [key, variant] of [['v1', 'v1'], ['v2Sharded', 'v2'], ['v3', 'v3']] as const) {
    test(`${variant}: config.json is the tiny config and the index maps every manifest tensor`, async () => {
      const config = JSON.parse(await readFile(join(dirs[key], 'config.json'), 'utf8'));
      assert.deepEqual(config, modelConfig(variant, 'tiny'));
      const manifest = tensorManifest(config);
      const index = JSON.parse(await readFile(join(dirs[key], INDEX_FILE), 'utf8'));
      assert.deepEqual(Object.keys(index.weight_map).sort(), manifest.map((s) => s.name).sort());
      assert.equal(index.metadata.total_size, 2 * sumParameters(manifest));
    });

    test(`${variant}: every shard header parses, is 8-byte aligned and covers its data exactly`, async () => {
      const manifest = new Map(tensorManifest(modelConfig(variant, 'tiny')).map((s) => [s.name, s]));
      const index = JSON.parse(await readFile(join(dirs[key], INDEX_FILE), 'utf8'));
      const shardFiles = [...new Set(Object.values(index.weight_map) as string[])];
      let tensorsSeen = 0;
      for (const shardFile of shardFiles) {
        const shard = await readShardHeader(join(dirs[key], shardFile));
        assert.equal((8 + shard.headerLength) % 8, 0);
        assert.deepEqual(shard.header.__metadata__, { format: 'pt' });
        let expectedBegin = 0;
        for (const [name, entry] of Object.entries(shard.header)) {
          if (name === '__metadata__') continue;
          const spec = manifest.get(name);
          assert.ok(spec, `unexpected tensor ${name}`);
          assert.equal(index.weight_map[name], shardFile);
          assert.equal(entry.dtype, 'BF16');
          assert.deepEqual(entry.shape, spec.shape);
          assert.deepEqual(entry.data_offsets, [expectedBegin, expectedBegin + 2 * elementCount(spec)]);
          expectedBegin = entry.data_offsets[1];
          tensorsSeen++;
        }
        assert.equal(shard.fileSize, 8 + shard.headerLength + expectedBegin);
      }
      assert.equal(tensorsSeen, manifest.size);
    });
  }

  test('v2 with a 48 MiB limit: the 66 MB lm_head and embed_tokens get a shard each, the rest shares a third', async () => {
    const index = JSON.parse(await readFile(join(dirs.v2Sharded, INDEX_FILE), 'utf8'));
    assert.equal(index.weight_map['lm_head.weight'], 'model-00001-of-000003.safetensors');
    assert.equal(index.weight_map['model.embed_tokens.weight'], 'model-00002-of-000003.safetensors');
    assert.equal(index.weight_map['model.layers.0.mlp.up_proj.weight'], 'model-00003-of-000003.safetensors');
    assert.equal(index.weight_map['model.view_seperator'], 'model-00003-of-000003.safetensors');
    const rest = await readShardHeader(join(dirs.v2Sharded, 'model-00003-of-000003.safetensors'));
    assert.ok(rest.fileSize - 8 - rest.headerLength <= SHARD_LIMIT);
  });

  test('v1 is one shard named model-00001-of-000001.safetensors, like the real checkpoints', async () => {
    const index = JSON.parse(await readFile(join(dirs.v1, INDEX_FILE), 'utf8'));
    assert.deepEqual([...new Set(Object.values(index.weight_map))], ['model-00001-of-000001.safetensors']);
  });

  test('tensor bytes on disk are the seed\'s stream for that tensor', async () => {
    for (const name of ['model.view_seperator', 'model.layers.2.mlp.experts.7.down_proj.weight', 'lm_head.weight']) {
      const spec = tensorManifest(modelConfig('v1', 'tiny')).find((s) => s.name === name)!;
      const expected = new Uint16Array(elementCount(spec));
      new NormalBf16Stream(1, name, spec.init).fill(expected);
      assert.deepEqual(await readTensor(join(dirs.v1, 'model-00001-of-000001.safetensors'), name), expected);
    }
  });

  test('weights are drawn with the documented scales', async () => {
    const file = join(dirs.v1, 'model-00001-of-000001.safetensors');
    const cases: [string, number, number][] = [
      ['model.embed_tokens.weight', 0, 1],
      ['lm_head.weight', 0, 1 / Math.sqrt(256)],
      ['model.sam_model.net_2.weight', 0, 1 / Math.sqrt(32 * 9)],
      ['model.layers.1.post_attention_layernorm.weight', 1, 0.1],
    ];
    for (const [name, mean, std] of cases) {
      const m = moments(await readTensor(file, name));
      assert.ok(Math.abs(m.mean - mean) < 0.1 * std + 0.01, `${name} mean ${m.mean}`);
      assert.ok(Math.abs(m.std / std - 1) < 0.1, `${name} std ${m.std}`);
    }
  });

  test('the same seed writes byte-identical shards; another seed writes different ones', async () => {
    const hash = async (dir: string) =>
      createHash('sha256').update(await readFile(join(dir, 'model-00001-of-000001.safetensors'))).digest('hex');
    assert.equal(await hash(dirs.v1Again), await hash(dirs.v1));
    assert.notEqual(await hash(dirs.v1OtherSeed), await hash(dirs.v1));
  });

  test('progress rises to the total shard size', async () => {
    const total = (await stat(join(dirs.v1, 'model-00001-of-000001.safetensors'))).size;
    assert.deepEqual(progress.at(-1), [total, total]);
    assert.ok(progress.every(([done], i) => i === 0 || done > progress[i - 1][0]));
  });
});

interface ShardEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

async function readShardHeader(file: string) {
  const handle = await open(file, 'r');
  try {
    const lengthBytes = Buffer.alloc(8);
    await handle.read(lengthBytes, 0, 8, 0);
    const headerLength = Number(lengthBytes.readBigUInt64LE(0));
    const json = Buffer.alloc(headerLength);
    await handle.read(json, 0, headerLength, 8);
    const header = JSON.parse(json.toString('utf8')) as Record<string, ShardEntry>;
    return { headerLength, header, fileSize: (await handle.stat()).size };
  } finally {
    await handle.close();
  }
}

async function readTensor(file: string, name: string): Promise<Uint16Array> {
  const { headerLength, header } = await readShardHeader(file);
  const [begin, end] = header[name].data_offsets;
  const handle = await open(file, 'r');
  try {
    const bytes = new Uint8Array(end - begin);
    await handle.read(bytes, 0, bytes.length, 8 + headerLength + begin);
    return new Uint16Array(bytes.buffer);
  } finally {
    await handle.close();
  }
}

function moments(bf16: Uint16Array): { mean: number; std: number } {
  let sum = 0;
  let sumSquares = 0;
  for (const bits of bf16) {
    const x = bf16ToF32(bits);
    sum += x;
    sumSquares += x * x;
  }
  const mean = sum / bf16.length;
  return { mean, std: Math.sqrt(sumSquares / bf16.length - mean * mean) };
}
