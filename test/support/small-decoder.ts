// Decoder dimensions small enough to count work by hand, for the bench's work and throughput tests.
import type { DecoderDims } from '../../src/engine/model-config.js';

/** hidden 4, 2 layers (dense, then MoE with 4 experts of width 3, top 2, 1 shared), vocab 10. */
export const SMALL_DECODER: DecoderDims = {
  hidden: 4,
  layers: 2,
  heads: 2,
  kvHeads: 1,
  headDim: 2,
  intermediate: 6,
  moeIntermediate: 3,
  routedExperts: 4,
  expertsPerToken: 2,
  sharedExperts: 1,
  firstDenseLayers: 1,
  moeLayerFreq: 1,
  vocab: 10,
  maxPositions: 64,
  rmsEps: 1e-6,
  ropeTheta: 10000,
  routedScaling: 1,
  normTopk: false,
  slidingWindow: 0,
};
