// Deliberately simple reference of the vision side (docs/model.md §5): SAM, then CLIP (V1/V3) or the Qwen2 encoder
// (V2), then the linear projector, one view at a time, in float64. Written from the spec alone; the native
// vision encoders are checked against it. Assembly of views into image rows lives in vision-assembly.ts.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SafetensorsCheckpoint } from './safetensors-reader.js';
import { type ClipWeights, clipForward, loadClip } from './vision-clip.js';
import { type VisionConfig, readVisionConfig } from './vision-config.js';
import { type Linear, type TensorLoader, affine, flatten } from './vision-math.js';
import { type Qwen2Weights, loadQwen2, qwen2Forward } from './vision-qwen2.js';
import { type SamWeights, loadSam, samForward } from './vision-sam.js';

/** One encoded view: tokens = grid·grid, row-major (index = row·grid + col). */
export interface VisionEncoding {
  grid: number; // S / 64: 16 for 1024, 10 for 640, 12 for 768
  sam: Float64Array; // SAM output [C, grid, grid] (NCHW), C = net_3 width
  encoder: Float64Array; // [tokens, width]: CLIP output with CLS dropped (V1/V3) or the Qwen2 query outputs (V2)
  projected: Float64Array; // [tokens, n_embed]
}

type Encoder = { kind: 'clip'; clip: ClipWeights } | { kind: 'qwen2'; qwen2: Qwen2Weights };

/** Tile side of the V2 local views, whose query table is query_768 (§4.3, §5.4). */
const V2_TILE_SIZE = 768;

/** The vision encoder, projector and separator vectors of one checkpoint. */
export class ReferenceVision {
  private constructor(
    readonly config: VisionConfig,
    private readonly sam: SamWeights,
    private readonly encoder: Encoder,
    private readonly projector: Linear, // [n_embed, input_dim]
    readonly imageNewline: Float64Array | undefined, // [n_embed]; V1/V3 only
    readonly viewSeparator: Float64Array, // [n_embed]
  ) {}

  /** Loads config.json and the vision tensors (§3.2–3.5) of a checkpoint directory, checking every shape. */
  static load(dir: string): ReferenceVision {
    const config = readVisionConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
    const checkpoint = SafetensorsCheckpoint.open(dir);
    const tensor: TensorLoader = (name, shape) => {
      const t = checkpoint.tensor(name);
      if (t.shape.join(',') !== shape.join(',')) {
        throw new Error(`${name}: shape [${t.shape}] but config.json implies [${shape}]`);
      }
      return t.data;
    };
    const { sam: samConfig, encoder: encoderConfig, imageSize, projectorInput, embedWidth } = config;
    // net_3's width: V2 configs list V1's 1024 although the weights output the Qwen2 dim (§1.2, §13 item 6).
    const net3Channels = checkpoint.tensor('model.sam_model.net_3.weight').shape[0];
    const encoderWidth = encoderConfig.kind === 'clip' ? encoderConfig.clip.width : encoderConfig.qwen2.dim;
    const expectedInput = encoderConfig.kind === 'clip' ? encoderWidth + net3Channels : encoderWidth;
    if (net3Channels !== encoderWidth || projectorInput !== expectedInput) {
      throw new Error(
        `net_3 outputs ${net3Channels} channels and projector input_dim is ${projectorInput}; ` +
          `the ${encoderConfig.kind} encoder of width ${encoderWidth} needs ${encoderWidth} and ${expectedInput}`,
      );
    }
    const sam = loadSam(tensor, samConfig, imageSize / samConfig.patchSize, net3Channels);
    const tokensOf = (side: number) => (side / (4 * samConfig.patchSize)) ** 2;
    const queryRows = { query768: tokensOf(V2_TILE_SIZE), query1024: tokensOf(imageSize) };
    const encoder: Encoder =
      encoderConfig.kind === 'clip'
        ? { kind: 'clip', clip: loadClip(tensor, encoderConfig.clip) }
        : { kind: 'qwen2', qwen2: loadQwen2(tensor, encoderConfig.qwen2, queryRows) };
    const projector: Linear = {
      rows: embedWidth,
      cols: projectorInput,
      data: tensor('model.projector.layers.weight', [embedWidth, projectorInput]),
      bias: tensor('model.projector.layers.bias', [embedWidth]),
    };
    const imageNewline =
      encoderConfig.kind === 'clip' ? Float64Array.from(tensor('model.image_newline', [embedWidth])) : undefined;
    const viewSeparator = Float64Array.from(tensor('model.view_seperator', [embedWidth]));
    return new ReferenceVision(config, sam, encoder, projector, imageNewline, viewSeparator);
  }

  /** Encodes one S×S view: pixels[3, S, S] (normalised to [−1, 1]) → SAM, encoder and projected tokens. */
  encode(pixels: Float32Array, S: number): VisionEncoding {
    const tokens = (S / (4 * this.config.sam.patchSize)) ** 2;
    if (this.encoder.kind === 'qwen2' && !this.encoder.qwen2.queries.has(tokens)) {
      throw new Error(`the Qwen2 encoder has no query table for a ${S}×${S} view (${tokens} tokens): 768 or 1024 only`);
    }
    const { tokens: samTokens, side } = samForward(this.sam, pixels, S);
    let encoded: Float64Array[];
    let projected: Float64Array[];
    if (this.encoder.kind === 'clip') {
      encoded = clipForward(this.encoder.clip, samTokens);
      // §5.5: CLIP features first, SAM features second
      projected = encoded.map((clip, t) => {
        const feature = new Float64Array(clip.length + samTokens[t].length);
        feature.set(clip);
        feature.set(samTokens[t], clip.length);
        return affine(this.projector, feature);
      });
    } else {
      encoded = qwen2Forward(this.encoder.qwen2, samTokens);
      projected = encoded.map((row) => affine(this.projector, row));
    }
    const channels = samTokens[0].length;
    const sam = new Float64Array(channels * side * side);
    samTokens.forEach((row, t) => row.forEach((value, c) => (sam[c * side * side + t] = value)));
    return { grid: side, sam, encoder: flatten(encoded), projected: flatten(projected) };
  }
}
