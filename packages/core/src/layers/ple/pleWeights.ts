import type { ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';
import { pleHeadCount, pleHeadVocabSizes } from './pleHash.ts';
import type { PleShape } from './pleMath.ts';

// PLE checkpoint tensors of layer i (model.md "PLE") under model.layers.{i}.ple., and the
// dimensions the math needs. The PLE is replicated on every rank, never TP-sharded.

export function plePrefix(layer: number): string {
  return `model.layers.${layer}.ple`;
}

/** Dimensions and hashing parameters of the PLE of this config. */
export function pleShape(config: ModelConfig): PleShape {
  const ple = config.ple;
  return {
    ngramSize: ple.ngramSize,
    headsPerNgram: ple.headsPerNgram,
    vocabSizes: pleHeadVocabSizes(ple),
    vocabSize: config.vocabSize,
    eosTokenId: config.eosTokenId,
    hidden: config.hiddenSize,
    streams: config.hc.count,
    embedDim: ple.embedDim,
    convKernel: ple.convKernel,
    convDilation: ple.convDilation,
    // model.md names one rms_norm_eps for the model; the PLE's norms use it too
    eps: config.rmsNormEps,
  };
}

/**
 * Full tensors of layer `layer`. Synthetic scales: table rows ~ N(0,1) (nn.Embedding's
 * init, as Engram's tables); key_proj std 1/sqrt(D) gives keys ~ N(0,1); value_proj std
 * 0.5/sqrt(D) gives values of RMS 0.5, so the gated values (gates around 0.3-0.7) have
 * RMS ~0.25; norm weights around 1 (mean 1, std 0.1, so that they matter in tests); conv
 * std 0.25 over 4 taps of unit-RMS normed values gives conv RMS ~0.5 and silu of it ~0.3:
 * the PLE output added to the streams has RMS ~0.4.
 */
export function pleWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  const H = config.hiddenSize;
  const n = config.hc.count;
  const { embedDim: D, convKernel: K } = config.ple;
  const headDim = D / pleHeadCount(config.ple);
  const p = plePrefix(layer);
  const normWeight = { kind: 'normal', mean: 1, std: 0.1 } as const;
  return [
    ...pleHeadVocabSizes(config.ple).map(
      (v, j): WeightSpec => ({ name: `${p}.ngram_embeddings.${j}.weight`, shape: [v, headDim], dtype: 'bf16', init: { kind: 'normal', std: 1 } }),
    ),
    { name: `${p}.key_proj.weight`, shape: [H, D], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(D) } },
    { name: `${p}.value_proj.weight`, shape: [H, D], dtype: 'bf16', init: { kind: 'normal', std: 0.5 / Math.sqrt(D) } },
    { name: `${p}.key_norm.weight`, shape: [H], dtype: 'bf16', init: normWeight },
    { name: `${p}.query_norm.weight`, shape: [n * H], dtype: 'bf16', init: normWeight },
    { name: `${p}.out_norm.weight`, shape: [n * H], dtype: 'bf16', init: normWeight },
    { name: `${p}.conv.weight`, shape: [n * H, 1, K], dtype: 'bf16', init: { kind: 'normal', std: 0.25 } },
  ];
}

/** What every rank reads (the PLE is replicated): the n-gram tables stacked along rows, head 0 first. */
export function pleRankWeights(
  config: ModelConfig,
  layer: number,
  rank: number,
  tp: number,
): Record<'tables' | 'keyProj' | 'valueProj' | 'keyNorm' | 'queryNorm' | 'outNorm' | 'conv', WeightRef> {
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`ple: tp ${tp} must be a positive integer`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`ple: rank ${rank} is outside [0, ${tp})`);
  const p = plePrefix(layer);
  const heads = pleHeadCount(config.ple);
  return {
    tables: { name: `${p}.ngram_embeddings[0:${heads}].weight`, concat: Array.from({ length: heads }, (_, j) => `${p}.ngram_embeddings.${j}.weight`) },
    keyProj: { name: `${p}.key_proj.weight` },
    valueProj: { name: `${p}.value_proj.weight` },
    keyNorm: { name: `${p}.key_norm.weight` },
    queryNorm: { name: `${p}.query_norm.weight` },
    outNorm: { name: `${p}.out_norm.weight` },
    conv: { name: `${p}.conv.weight` },
  };
}
