import type { ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';
import { pleHeadCount, pleTables } from './pleHash.ts';
import type { PleShape, PleWeightData } from './pleMath.ts';

// PLE checkpoint tensors of decoder layer i, named as HF's state dict names them
// (`Qwen4ExpTextDecoderLayer.ple` = `Qwen4ExpTextPLELayer`), under model.layers.{i}.ple.
// (the shipped multimodal checkpoint prefixes model.language_model.). The PLE is replicated
// on every rank here, never TP-sharded.

export function plePrefix(layer: number): string {
  return `model.layers.${layer}.ple`;
}

/** The module parameter: the padded table [paddedRows, headDim], which HF concatenates from the shards. */
export function pleTableName(layer: number): string {
  return `${plePrefix(layer)}.ple_embedding.ngram_embedding.weight`;
}

export interface PleTableShard {
  /** checkpoint tensor name */
  name: string;
  /** first row of the padded table it holds */
  rowStart: number;
  rows: number;
}

/**
 * The checkpoint's row shards of the padded table: shard k = `...ngram_embedding.shard_{k}.weight`,
 * k = 0 .. splitNgramParts-1, rows [k*S, min((k+1)*S, paddedRows)) with S = ceil(paddedRows
 * / splitNgramParts) (ATOM `_embedding_shard_loader`; HF concatenates them in k order).
 * Flash-Next: 128 shards of 2,500,012 rows. A split that would leave a shard empty is an error.
 */
export function pleTableShards(config: ModelConfig, layer: number): PleTableShard[] {
  const { paddedRows } = pleTables(config, layer);
  const parts = config.ple.splitNgramParts;
  const S = Math.ceil(paddedRows / parts);
  if ((parts - 1) * S >= paddedRows) throw new Error(`ple: ${paddedRows} table rows do not split into ${parts} non-empty shards of ${S}`);
  return Array.from({ length: parts }, (_, k) => ({
    name: `${plePrefix(layer)}.ple_embedding.ngram_embedding.shard_${k}.weight`,
    rowStart: k * S,
    rows: Math.min(S, paddedRows - k * S),
  }));
}

/** A derived int64 buffer the checkpoint stores; a loader must find it equal to `values`. */
export interface PleBuffer {
  name: string;
  shape: number[];
  dtype: 'i64';
  values: BigInt64Array;
}

/**
 * HF's `nn.Buffer`s of `Qwen4ExpTextNGramEmbedding` (persistent, so in the checkpoint):
 * `layer_multipliers` [ngramSize], `ngram_heads_vocab_sizes` [heads], `ngram_heads_offsets`
 * [heads], all int64. ATOM derives them and verifies the checkpoint's (`_verify_derived`).
 */
export function pleBuffers(config: ModelConfig, layer: number): PleBuffer[] {
  const t = pleTables(config, layer);
  const p = `${plePrefix(layer)}.ple_embedding`;
  const buf = (name: string, values: readonly (bigint | number)[]): PleBuffer => ({
    name: `${p}.${name}`,
    shape: [values.length],
    dtype: 'i64',
    values: BigInt64Array.from(values, (v) => BigInt(v)),
  });
  return [buf('layer_multipliers', t.multipliers), buf('ngram_heads_vocab_sizes', t.vocabSizes), buf('ngram_heads_offsets', t.offsets)];
}

/** Dimensions and hashing constants of the PLE of decoder layer `layer`. */
export function pleShape(config: ModelConfig, layer: number): PleShape {
  const ple = config.ple;
  const t = pleTables(config, layer);
  return {
    ngramSize: ple.ngramSize,
    headsPerNgram: ple.headsPerNgram,
    multipliers: t.multipliers,
    vocabSizes: t.vocabSizes,
    offsets: t.offsets,
    vocabSize: config.vocabSize,
    eosTokenId: config.eosTokenId,
    hidden: config.hiddenSize,
    streams: config.hc.count,
    embedDim: ple.embedDim,
    tableRows: t.paddedRows,
    convKernel: ple.convKernel,
    convDilation: ple.ngramSize,
    // HF builds the three norms with config.rms_norm_eps
    eps: config.rmsNormEps,
  };
}

/**
 * The bf16 checkpoint tensors of layer `layer` (the int64 buffers: pleBuffers). Synthetic
 * scales: table rows ~ N(0,1); key_proj std 1/sqrt(D) (its scale is normed away);
 * value_proj std 0.5/sqrt(D) gives values of RMS 0.5, so the gated values (gates around
 * 0.3-0.7) have RMS ~0.25; RMS1p offsets ~ N(0, 0.1) (so that they matter in tests); conv
 * std 0.25 over 4 taps of unit-RMS normed values gives conv RMS ~0.5 and silu of it ~0.3:
 * the PLE output added to the streams has RMS ~0.4.
 */
export function pleWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  const H = config.hiddenSize;
  const n = config.hc.count;
  const { embedDim: D, convKernel: K } = config.ple;
  const headDim = D / pleHeadCount(config.ple);
  const p = plePrefix(layer);
  const offset = { kind: 'normal', std: 0.1 } as const;
  return [
    ...pleTableShards(config, layer).map((s): WeightSpec => ({ name: s.name, shape: [s.rows, headDim], dtype: 'bf16', init: { kind: 'normal', std: 1 } })),
    { name: `${p}.key_proj.weight`, shape: [n * H, D], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(D) } },
    { name: `${p}.value_proj.weight`, shape: [H, D], dtype: 'bf16', init: { kind: 'normal', std: 0.5 / Math.sqrt(D) } },
    { name: `${p}.norm_key.weight`, shape: [n * H], dtype: 'bf16', init: offset },
    { name: `${p}.norm_query.weight`, shape: [n * H], dtype: 'bf16', init: offset },
    { name: `${p}.norm_conv.weight`, shape: [n * H], dtype: 'bf16', init: offset },
    { name: `${p}.conv1d.weight`, shape: [n * H, 1, K], dtype: 'bf16', init: { kind: 'normal', std: 0.25 } },
  ];
}

/**
 * What rank `rank` reads (the PLE is replicated): the table as the concatenation of its
 * shards, read row by row as the ids need them ('gathered'), or the rank's vocab slice of it,
 * rows [rank*R/tp, (rank+1)*R/tp) of the R padded rows ('vocabParallel', layers/ple/pleGraph.ts).
 */
export function pleRankWeights(
  config: ModelConfig,
  layer: number,
  rank: number,
  tp: number,
  table: 'gathered' | 'vocabParallel' = 'gathered',
): Record<keyof PleWeightData, WeightRef> {
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`ple: tp ${tp} must be a positive integer`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`ple: rank ${rank} is outside [0, ${tp})`);
  const p = plePrefix(layer);
  const concat = pleTableShards(config, layer).map((s) => s.name);
  const rows = pleTables(config, layer).paddedRows;
  if (table === 'vocabParallel' && rows % tp !== 0)
    throw new Error(`ple: the n-gram table's ${rows} rows do not split into tp ${tp} vocab slices (the gathered table reads rows on demand instead)`);
  return {
    table:
      table === 'gathered'
        ? { name: pleTableName(layer), concat, gather: 'rows' }
        : { name: pleTableName(layer), concat, ...(tp === 1 ? {} : { slice: { axis: 0, ranges: [[(rank * rows) / tp, ((rank + 1) * rows) / tp]] } }) },
    keyProj: { name: `${p}.key_proj.weight` },
    valueProj: { name: `${p}.value_proj.weight` },
    normKey: { name: `${p}.norm_key.weight` },
    normQuery: { name: `${p}.norm_query.weight` },
    normConv: { name: `${p}.norm_conv.weight` },
    conv: { name: `${p}.conv1d.weight` },
  };
}
