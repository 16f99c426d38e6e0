import { layerKind, type ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';

// Checkpoint tensors of a GatedDeltaNet layer (Qwen3-Next / Qwen3.5 names, split qkv/z/b/a
// projections as model.md lists them) and each TP rank's slices of them.

export function gdnPrefix(layer: number): string {
  return `model.layers.${layer}.linear_attn.`;
}

function checkLayer(config: ModelConfig, layer: number): void {
  if (!Number.isInteger(layer) || layer < 0 || layer >= config.numLayers) {
    throw new Error(`gdn: layer ${layer} is outside [0, ${config.numLayers}) of config '${config.name}'`);
  }
  if (layerKind(config, layer) !== 'linear_attention') {
    throw new Error(`gdn: layer ${layer} of config '${config.name}' is a full-attention layer, not linear attention`);
  }
}

/**
 * Full shapes and synthetic inits. Stds keep a unit-RMS input at unit scale through each
 * projection (1/sqrt(fan_in)), the conv at unit gain (1/sqrt(K)); A_log ~ -1 and
 * dt_bias ~ 0 give per-step decays exp(g) around 0.6-0.9 so the state neither explodes nor
 * forgets at once; norm.weight ~ 1 (plain weight); out_proj 1/sqrt(fan_in) so the output
 * RMS is about that of sigmoid(z) times the normed value, ~0.5.
 */
export function gdnWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  checkLayer(config, layer);
  const H = config.hiddenSize;
  const { numKeyHeads: kh, numValueHeads: vh, keyHeadDim: dk, valueHeadDim: dv, convKernel } = config.linearAttention;
  const channels = 2 * kh * dk + vh * dv;
  const p = gdnPrefix(layer);
  const fanIn = (n: number) => ({ kind: 'normal' as const, std: 1 / Math.sqrt(n) });
  return [
    { name: `${p}in_proj_qkv.weight`, shape: [channels, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}in_proj_z.weight`, shape: [vh * dv, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}in_proj_b.weight`, shape: [vh, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}in_proj_a.weight`, shape: [vh, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}conv1d.weight`, shape: [channels, 1, convKernel], dtype: 'bf16', init: fanIn(convKernel) },
    { name: `${p}A_log`, shape: [vh], dtype: 'bf16', init: { kind: 'normal', mean: -1, std: 0.5 } },
    { name: `${p}dt_bias`, shape: [vh], dtype: 'bf16', init: { kind: 'normal', mean: 0, std: 0.5 } },
    { name: `${p}norm.weight`, shape: [dv], dtype: 'bf16', init: { kind: 'normal', mean: 1, std: 0.1 } },
    { name: `${p}out_proj.weight`, shape: [H, vh * dv], dtype: 'bf16', init: fanIn(vh * dv) },
  ];
}

/** The key heads [k0, k1) and value heads [v0, v1) rank `rank` of `tp` owns (contiguous). */
export function gdnRankHeads(config: ModelConfig, rank: number, tp: number): { k0: number; k1: number; v0: number; v1: number } {
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`gdn: rank ${rank} is outside [0, ${tp})`);
  const { numKeyHeads: kh, numValueHeads: vh } = config.linearAttention;
  // the user's tp is validated once, by the planner; this guards direct use of the split
  if (kh % tp !== 0 || vh % tp !== 0) throw new Error(`gdn: tp ${tp} does not divide the ${kh} key and ${vh} value heads`);
  return { k0: (rank * kh) / tp, k1: ((rank + 1) * kh) / tp, v0: (rank * vh) / tp, v1: ((rank + 1) * vh) / tp };
}

/**
 * Rank `rank`'s slices, keyed by role: the qkv rows (and conv channels) are three ranges,
 * the rank's q heads, k heads and v heads, so the local tensor keeps the [q | k | v]
 * layout; z/b/a/A_log/dt_bias rows of its value heads; out_proj columns of its value
 * heads (row-parallel: the rank's output is a partial sum); norm.weight whole.
 */
export function gdnRankWeights(config: ModelConfig, layer: number, rank: number, tp: number): Record<string, WeightRef> {
  checkLayer(config, layer);
  const { k0, k1, v0, v1 } = gdnRankHeads(config, rank, tp);
  const { numKeyHeads: kh, keyHeadDim: dk, valueHeadDim: dv } = config.linearAttention;
  const p = gdnPrefix(layer);
  const qkvRanges: [number, number][] = [
    [k0 * dk, k1 * dk],
    [kh * dk + k0 * dk, kh * dk + k1 * dk],
    [2 * kh * dk + v0 * dv, 2 * kh * dk + v1 * dv],
  ];
  const rows = (ranges: [number, number][]) => ({ axis: 0, ranges });
  return {
    qkv: { name: `${p}in_proj_qkv.weight`, slice: rows(qkvRanges) },
    z: { name: `${p}in_proj_z.weight`, slice: rows([[v0 * dv, v1 * dv]]) },
    b: { name: `${p}in_proj_b.weight`, slice: rows([[v0, v1]]) },
    a: { name: `${p}in_proj_a.weight`, slice: rows([[v0, v1]]) },
    conv: { name: `${p}conv1d.weight`, slice: rows(qkvRanges) },
    aLog: { name: `${p}A_log`, slice: rows([[v0, v1]]) },
    dtBias: { name: `${p}dt_bias`, slice: rows([[v0, v1]]) },
    norm: { name: `${p}norm.weight` },
    out: { name: `${p}out_proj.weight`, slice: { axis: 1, ranges: [[v0 * dv, v1 * dv]] } },
  };
}
