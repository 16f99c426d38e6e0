import { layerKind, type ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';

// Checkpoint tensors of a gated full-attention layer with its QSA indexer (the names of HF
// modeling_qwen4_exp.py's Qwen4ExpTextAttention / Qwen4ExpTextQSAIndexer state dict; the
// shipped checkpoint prefixes them with `model.language_model.`) and each TP rank's slices.

export function attentionPrefix(layer: number): string {
  return `model.layers.${layer}.self_attn.`;
}

function checkLayer(config: ModelConfig, layer: number): void {
  if (!Number.isInteger(layer) || layer < 0 || layer >= config.numLayers) {
    throw new Error(`attention: layer ${layer} is outside [0, ${config.numLayers}) of config '${config.name}'`);
  }
  if (layerKind(config, layer) !== 'attention') {
    throw new Error(`attention: layer ${layer} of config '${config.name}' is a linear-attention layer, not full attention`);
  }
}

/**
 * Full shapes and synthetic inits: projections 1/sqrt(fan_in) (unit-RMS in, unit-RMS out),
 * q_norm/k_norm and the indexer's q_layernorm/k_layernorm stored as offsets from 1
 * (Gemma-style 1 + w) ~ N(0, 0.1), o_proj 1/sqrt(fan_in) so the output RMS is that of the
 * gated head outputs, ~0.1-0.5. indexer.index_qk_proj is [(nHeads + kvHeads) * headDim, H]
 * with rows [q: nHeads x headDim | k_raw: headDim].
 */
export function attentionWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  checkLayer(config, layer);
  const H = config.hiddenSize;
  const { numHeads: qh, numKvHeads: kvh, headDim: hd, indexer: ix } = config.attention;
  const p = attentionPrefix(layer);
  const fanIn = (n: number) => ({ kind: 'normal' as const, std: 1 / Math.sqrt(n) });
  return [
    { name: `${p}q_proj.weight`, shape: [qh * 2 * hd, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}k_proj.weight`, shape: [kvh * hd, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}v_proj.weight`, shape: [kvh * hd, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}q_norm.weight`, shape: [hd], dtype: 'bf16', init: { kind: 'normal', mean: 0, std: 0.1 } },
    { name: `${p}k_norm.weight`, shape: [hd], dtype: 'bf16', init: { kind: 'normal', mean: 0, std: 0.1 } },
    { name: `${p}o_proj.weight`, shape: [H, qh * hd], dtype: 'bf16', init: fanIn(qh * hd) },
    { name: `${p}indexer.index_qk_proj.weight`, shape: [(ix.nHeads + ix.kvHeads) * ix.headDim, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}indexer.q_layernorm.weight`, shape: [ix.headDim], dtype: 'bf16', init: { kind: 'normal', mean: 0, std: 0.1 } },
    { name: `${p}indexer.k_layernorm.weight`, shape: [ix.headDim], dtype: 'bf16', init: { kind: 'normal', mean: 0, std: 0.1 } },
  ];
}

/**
 * Query heads [h0, h1) and KV heads [kv0, kv1) of rank `rank` of `tp`. KV heads split
 * when tp divides them; when tp is a multiple of them, each rank's query heads fall in one
 * GQA group and the rank takes (a replica of) that group's KV head. Both cases are
 * kv0 = floor(h0 * kvHeads / heads), kv1 = ceil(h1 * kvHeads / heads).
 */
export function attentionRankHeads(config: ModelConfig, rank: number, tp: number): { h0: number; h1: number; kv0: number; kv1: number } {
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`attention: rank ${rank} is outside [0, ${tp})`);
  const { numHeads: qh, numKvHeads: kvh } = config.attention;
  // the user's tp is validated once, by the planner; this guards direct use of the split
  if (qh % tp !== 0 || (kvh % tp !== 0 && tp % kvh !== 0))
    throw new Error(`attention: tp ${tp} does not divide the ${qh} query heads, or neither divides nor is a multiple of the ${kvh} KV heads`);
  const h0 = (rank * qh) / tp;
  const h1 = ((rank + 1) * qh) / tp;
  return { h0, h1, kv0: Math.floor((h0 * kvh) / qh), kv1: Math.ceil((h1 * kvh) / qh) };
}

/**
 * Rank `rank`'s slices, keyed by role: q_proj rows of its heads (each head's [query | gate]
 * block is contiguous, so one range), k/v rows of its KV heads, q_norm/k_norm whole,
 * o_proj columns of its heads (row-parallel: the rank's output is a partial sum). The
 * indexer is replicated (ATOM: ReplicatedLinear): every rank gets index_qk_proj's query
 * rows (indexQ) and k_raw rows (indexK) whole, as two row ranges so that a row-sharded
 * indexer can project its own rows' queries and all rows' keys; each output element is
 * the same dot product as in the one [T, (nHeads + 1) * headDim] GEMM.
 */
export function attentionRankWeights(config: ModelConfig, layer: number, rank: number, tp: number): Record<string, WeightRef> {
  checkLayer(config, layer);
  const { h0, h1, kv0, kv1 } = attentionRankHeads(config, rank, tp);
  const { headDim: hd, indexer: ix } = config.attention;
  const p = attentionPrefix(layer);
  const rows = (start: number, end: number) => ({ axis: 0, ranges: [[start, end]] as [number, number][] });
  const indexQRows = ix.nHeads * ix.headDim;
  return {
    q: { name: `${p}q_proj.weight`, slice: rows(h0 * 2 * hd, h1 * 2 * hd) },
    k: { name: `${p}k_proj.weight`, slice: rows(kv0 * hd, kv1 * hd) },
    v: { name: `${p}v_proj.weight`, slice: rows(kv0 * hd, kv1 * hd) },
    qNorm: { name: `${p}q_norm.weight` },
    kNorm: { name: `${p}k_norm.weight` },
    o: { name: `${p}o_proj.weight`, slice: { axis: 1, ranges: [[h0 * hd, h1 * hd]] } },
    indexQ: { name: `${p}indexer.index_qk_proj.weight`, slice: rows(0, indexQRows) },
    indexK: { name: `${p}indexer.index_qk_proj.weight`, slice: rows(indexQRows, indexQRows + ix.kvHeads * ix.headDim) },
    indexQNorm: { name: `${p}indexer.q_layernorm.weight` },
    indexKNorm: { name: `${p}indexer.k_layernorm.weight` },
  };
}
