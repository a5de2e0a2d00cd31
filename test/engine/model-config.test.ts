import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { detectVariant, parseModelConfig } from '../../src/engine/model-config.js';
import { modelConfig } from '../../src/model/synth/model-configs.js';

const sharedFixture = path.resolve('../shared/fixtures/unlimited-ocr/config.json');

describe('model config', () => {
  test('the variant is read from architectures', () => {
    assert.equal(detectVariant({ architectures: ['DeepseekOCRForCausalLM'] }), 'v1');
    assert.equal(detectVariant({ architectures: ['DeepseekOCR2ForCausalLM'] }), 'v2');
    assert.equal(detectVariant({ architectures: ['UnlimitedOCRForCausalLM'] }), 'v3');
  });

  test('without architectures the model type decides', () => {
    assert.equal(detectVariant({ model_type: 'unlimited-ocr' }), 'v3');
    assert.equal(detectVariant({ model_type: 'deepseek_vl_v2', vision_config: { model_name: 'deepencoderv2' } }), 'v2');
    assert.equal(detectVariant({ model_type: 'deepseek_vl_v2' }), 'v1');
  });

  test('an unknown model is an error that suggests --variant', () => {
    assert.throws(() => detectVariant({ architectures: ['LlamaForCausalLM'] }), /--variant/);
  });

  test('the full V1 config gives the DeepSeek3B-MoE dimensions with full attention', () => {
    const { decoder } = parseModelConfig(modelConfig('v1', 'full') as unknown as Record<string, unknown>);
    assert.deepEqual(
      [decoder.hidden, decoder.layers, decoder.heads, decoder.headDim, decoder.routedExperts, decoder.expertsPerToken],
      [1280, 12, 10, 128, 64, 6],
    );
    assert.equal(decoder.slidingWindow, 0);
    assert.equal(decoder.normTopk, false);
    assert.equal(decoder.rmsEps, 1e-6);
    assert.equal(decoder.ropeTheta, 10000);
  });

  test('the real Unlimited-OCR config.json gives V3 with a 128-token window', { skip: !existsSync(sharedFixture) }, () => {
    const config = parseModelConfig(JSON.parse(readFileSync(sharedFixture, 'utf8')));
    assert.equal(config.variant, 'v3');
    assert.equal(config.decoder.slidingWindow, 128);
    assert.equal(config.decoder.maxPositions, 32768);
  });

  test('--variant overrides detection: a V1 config run as V3 gets the default window', () => {
    const config = parseModelConfig(modelConfig('v1', 'tiny') as unknown as Record<string, unknown>, 'v3');
    assert.equal(config.variant, 'v3');
    assert.equal(config.decoder.slidingWindow, 128);
  });
});
