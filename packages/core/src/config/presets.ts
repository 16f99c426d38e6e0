import type { ModelConfig } from './modelConfig.ts';
import { validateConfig } from './validate.ts';

/** Qwen3.8-Flash-Next, values from model.md. */
export const FLASH_NEXT: ModelConfig = {
  name: 'flash-next',
  hiddenSize: 2560,
  numLayers: 48,
  fullAttentionInterval: 4,
  rmsNormEps: 1e-6,
  vocabSize: 248320,
  eosTokenId: 248044,
  hc: { count: 4, lowRank: 320 },
  attention: {
    numHeads: 24,
    numKvHeads: 2,
    headDim: 256,
    ropeDims: 64,
    ropeTheta: 1e7,
    indexer: { nHeads: 4, kvHeads: 1, headDim: 128, budget: 2048, compressRatio: 4 },
  },
  linearAttention: { numKeyHeads: 16, numValueHeads: 48, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4 },
  moe: { numExperts: 512, topK: 10, intermediate: 640, sharedIntermediate: 640, normTopkProb: true },
  ple: {
    layerIds: [1],
    embedDim: 2560,
    convKernel: 4,
    ngramSize: 3,
    headsPerNgram: 8,
    ngramVocabSizeBase: 20_000_000,
    makeNgramVocabSizeDivisibleBy: 128,
    seed: 1234,
    splitNgramParts: 128,
  },
  mtp: true,
};

/**
 * Same structure as Flash-Next at 1/20 the width: n = 4, r = H/8 (r + n is the first GEMM
 * width), GQA, value heads = 3 x key heads, every 4th layer attention, PLE at index 1,
 * RoPE on a quarter of the head dim. 8 layers, so a multi-layer stack runs in seconds.
 */
export const SMALL: ModelConfig = {
  name: 'small',
  hiddenSize: 128,
  numLayers: 8,
  fullAttentionInterval: 4,
  rmsNormEps: 1e-6,
  vocabSize: 4096,
  eosTokenId: 4095,
  hc: { count: 4, lowRank: 16 },
  // indexer: 16 blocks of 4, so every row past 67 visible tokens drops some (T >= 68)
  attention: {
    numHeads: 8,
    numKvHeads: 2,
    headDim: 32,
    ropeDims: 8,
    ropeTheta: 1e7,
    indexer: { nHeads: 4, kvHeads: 1, headDim: 16, budget: 64, compressRatio: 4 },
  },
  linearAttention: { numKeyHeads: 4, numValueHeads: 12, keyHeadDim: 16, valueHeadDim: 16, convKernel: 4 },
  moe: { numExperts: 16, topK: 4, intermediate: 32, sharedIntermediate: 32, normTopkProb: true },
  ple: {
    layerIds: [1],
    embedDim: 128,
    convKernel: 4,
    ngramSize: 3,
    headsPerNgram: 8,
    // 16 primes from 1009: 16,826 rows padded to 16,896 x 8, 128 shards of 132 rows
    ngramVocabSizeBase: 1009,
    makeNgramVocabSizeDivisibleBy: 128,
    seed: 1234,
    splitNgramParts: 128,
  },
  mtp: true,
};

/** The smallest configuration with every part present: unit tests. */
export const TINY: ModelConfig = {
  name: 'tiny',
  hiddenSize: 32,
  numLayers: 4,
  fullAttentionInterval: 4,
  rmsNormEps: 1e-6,
  vocabSize: 512,
  eosTokenId: 511,
  hc: { count: 4, lowRank: 4 },
  // indexer: 4 blocks of 4, dropping from 20 visible tokens on
  attention: {
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    ropeDims: 4,
    ropeTheta: 1e7,
    indexer: { nHeads: 4, kvHeads: 1, headDim: 8, budget: 16, compressRatio: 4 },
  },
  linearAttention: { numKeyHeads: 4, numValueHeads: 12, keyHeadDim: 8, valueHeadDim: 8, convKernel: 4 },
  moe: { numExperts: 8, topK: 2, intermediate: 16, sharedIntermediate: 16, normTopkProb: true },
  ple: {
    layerIds: [1],
    embedDim: 32,
    convKernel: 4,
    ngramSize: 3,
    headsPerNgram: 8,
    // 16 primes from 101: 2,206 rows padded to 2,304 x 2, 4 shards of 576 rows
    ngramVocabSizeBase: 101,
    makeNgramVocabSizeDivisibleBy: 128,
    seed: 1234,
    splitNgramParts: 4,
  },
  mtp: true,
};

export const PRESETS: Readonly<Record<string, ModelConfig>> = {
  'flash-next': FLASH_NEXT,
  small: SMALL,
  tiny: TINY,
};

export function getConfig(name: string): ModelConfig {
  // Own keys only: '__proto__' or 'toString' must be "unknown config", not Object.prototype's.
  const c = Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
  if (!c) throw new Error(`unknown config '${name}' (known: ${Object.keys(PRESETS).join(', ')})`);
  return validateConfig(c);
}
