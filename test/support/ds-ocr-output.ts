// Output of the peer (ds-ocr at commit ab1fa31, `make blas`, Linux x86-64) as recorded from real runs on
// this project's full-size synthetic checkpoints with `-n N --min-tokens N --profile` (stderr; the
// recognised text goes to stdout), and a stand-in for the peer that prints the same lines.

/** V1, the 1600×2000 page, 8 generated tokens. */
export const DS_OCR_V1_STDERR = `Loading DeepSeek-OCR model from bench-models/v1
Detected DeepSeek-OCR version 1
Contiguous expert blocks: 3176.2 MB allocated (64 experts × 11 layers + shared, 1 block/layer)
All weights loaded
Metal GPU acceleration: disabled (CPU only)
Model loaded successfully (version 1, 12 layers)
Resizing 1600x2000 -> 1024x1024
SAM forward: 1024x1024 -> 256 tokens (grid 64x64, downsampled 16x16)
Visual tokenizer: 1600x2000 image -> 256 SAM tokens
CLIP: using SAM features directly as patch_embeds (256 tokens x 1024 dim, V1)
CLIP+SAM concat: [256, 1024] + [256, 1024] → [256, 2048]
CLIP+SAM+Projector: 256 patches → 273 tokens (with newlines + view_sep, V1)
Tokenizer: 830 added_tokens from tokenizer.json (vocab expanded to 128827)
Tokenizer: 127741 merges from tokenizer.json
Tokenizer loaded from tokenizer.json: 128827 vocab, DeepSeek format
V1 prompt: BOS + img_start + enc(273) + img_end + text(4) = 280 tokens
Decoder prefix: 280 tokens
BF16 dispatch: AVX2 path
Prefill top5: [73203:4.10, 53501:4.06, 105516:4.02, 115998:4.01, 104612:3.99]
Step 0: token=73203 (from prefill logits)
Recognition: 8 tokens generated in 103707 ms
Inference: 103707 ms, 8 text tokens (4.21 tok/s decode)
  Encoding: 92349 ms | Prefill: 9459 ms | Decode: 1899 ms

=== PROFILER (decode: 1899ms, 8 steps, avg 237.32ms/step) ===
  QKV proj:     137.3 ms (  7.2%)
  Attention:     48.3 ms (  2.5%)
  Out proj:      52.2 ms (  2.7%)
  MLP/MoE:     1150.6 ms ( 60.6%)
  LM head:      474.0 ms ( 25.0%)
  Sampling:       0.0 ms (  0.0%)

  Per-layer breakdown (ms/step avg):
  Layer      QKV    Attn    Proj     MLP   Total
  0        2.544   0.690   0.312   8.034  11.592
  1        1.017   0.854   1.090  11.115  14.082
  2        0.867   0.322   0.609   9.704  11.508
  3        1.623   1.030   0.298  10.009  12.968
  4        1.472   0.344   0.305  13.148  15.296
  5        0.907   0.362   0.342  14.193  15.811
  6        1.903   0.394   0.759  14.098  17.161
  7        1.351   0.394   0.805  15.002  17.559
  8        1.342   0.556   0.317  10.385  12.611
  9        1.353   0.373   0.521  13.520  15.773
  10       1.347   0.385   0.291  11.923  13.954
  11       1.444   0.335   0.872  12.693  15.350
`;

/** V2, a 400×100 page (the global view alone), 3 generated tokens. */
export const DS_OCR_V2_STDERR = `Loading DeepSeek-OCR model from bench-models/v2
Detected DeepSeek-OCR version 2
Contiguous expert blocks: 3176.2 MB allocated (64 experts × 11 layers + shared, 1 block/layer)
All weights loaded
Metal GPU acceleration: disabled (CPU only)
Model loaded successfully (version 2, 12 layers)
Small image 400x100: global only (1024x1024)
SAM forward: 1024x1024 -> 256 tokens (grid 64x64, downsampled 16x16)
DeepEncoder V2: 256 visual + 256 causal flow = 512 total
DeepEncoder V2: 512 in -> 256 out
  encoder output: mean_abs=0.8052 max_abs=5.1567 first=[0.4792, -0.7303, -0.8507, -0.2852]
Tokenizer: 830 added_tokens from tokenizer.json (vocab expanded to 128827)
Tokenizer: 127741 merges from tokenizer.json
Tokenizer loaded from tokenizer.json: 128827 vocab, DeepSeek format
V2 Prompt: BOS + img(257 = global257 + local0) + after(4) = 262
V2 Layout: image_size=640, num_queries=10, local_tokens/crop=100, crops=0, local_enc=0, n_enc=257
Decoder prefix: 262 tokens
BF16 dispatch: AVX2 path
Prefill top5: [51155:4.05, 81437:3.90, 85002:3.89, 24484:3.84, 125870:3.82]
Step 0: token=51155 (from prefill logits)
Recognition: 3 tokens generated in 107182 ms
Inference: 107182 ms, 3 text tokens (2.20 tok/s decode)
  Encoding: 91067 ms | Prefill: 14752 ms | Decode: 1364 ms

=== PROFILER (decode: 1364ms, 3 steps, avg 454.60ms/step) ===
  QKV proj:      78.9 ms (  5.8%)
  Attention:     40.9 ms (  3.0%)
  Out proj:      31.8 ms (  2.3%)
  MLP/MoE:     1050.2 ms ( 77.0%)
  LM head:      158.3 ms ( 11.6%)
  Sampling:       0.0 ms (  0.0%)

  Per-layer breakdown (ms/step avg):
  Layer      QKV    Attn    Proj     MLP   Total
  0        5.581   1.505   0.198   9.234  16.579
  1        2.474   2.633   0.895  45.901  51.907
  2        0.626   1.947   2.700  24.368  29.645
  3        3.247   0.210   0.192  19.528  23.194
  4        1.360   0.183   1.277  21.680  24.543
  5        0.722   0.961   0.182  32.794  34.662
  6        1.444   0.182   1.012  21.508  24.162
  7        1.290   0.174   0.172  16.584  18.225
  8        0.742   0.917   1.216  26.648  29.545
  9        0.981   0.517   1.125  30.198  32.836
  10       5.481   4.240   1.468  73.497  84.709
  11       2.350   0.168   0.148  28.130  30.801
`;

/**
 * A Node.js script standing in for ds_ocr: it checks its arguments as the peer would need them,
 * appends them and the page image's size (from the PNG header) as one JSON line to $FAKE_PEER_LOG,
 * and prints the peer's summary lines with timings that depend on --int4, for exactly -n tokens.
 */
export const FAKE_PEER_SCRIPT = `#!/usr/bin/env node
const fs = require('node:fs');
const args = process.argv.slice(2);
const value = (name) => args[args.indexOf(name) + 1];
const png = fs.readFileSync(value('-i'));
const size = [png.readUInt32BE(16), png.readUInt32BE(20)];
fs.appendFileSync(process.env.FAKE_PEER_LOG, JSON.stringify({ args, size }) + '\\n');
if (!fs.existsSync(value('-d') + '/config.json')) {
  console.error('Failed to load model from ' + value('-d'));
  process.exit(1);
}
const tokens = Number(value('-n'));
const int8 = args.includes('--int4');
console.error('Model loaded successfully (version 1, 12 layers)');
console.error('Decoder prefix: 77 tokens');
console.error('Inference: ' + (int8 ? 3000 : 4000) + ' ms, ' + tokens + ' text tokens (10.00 tok/s decode)');
console.error('  Encoding: ' + (int8 ? 1500 : 2000) + ' ms | Prefill: 500 ms | Decode: ' + (int8 ? 1000 : 1500) + ' ms');
console.error('');
console.error('=== PROFILER (decode: 1500ms, ' + tokens + ' steps, avg 1.00ms/step) ===');
`;
