import type { ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';

// MoE checkpoint tensors of layer i, named as HF's state dict names them
// (modeling_qwen4_exp.py: Qwen4ExpTextSparseMoeBlock = gate (Qwen4ExpTextTopKRouter),
// experts (Qwen4ExpTextExperts: 3-D parameters, no `.weight`), shared_expert
// (Qwen4ExpTextMLP), shared_expert_gate), and each rank's slice. The FP8 release's
// per-expert tensors are served under these stacked names by model/hfCheckpoint.ts.

export function moePrefix(layer: number): string {
  return `model.layers.${layer}.mlp`;
}

/**
 * Full tensors of layer `layer`. gate_up_proj [E, 2I, H] holds each expert's gate rows then
 * its up rows (HF chunks dim 1 in two: gate, up); down_proj is [E, H, I].
 * Synthetic scales (inputs are normed rows, RMS ~1): router std 1/sqrt(H) gives logits
 * ~ N(0,1), a routing that is neither uniform nor one-hot; gate/up std 1/sqrt(H) give gate
 * and up ~ N(0,1), so h = silu(g) u has RMS ~0.6; down std 1/sqrt(I) keeps o_e at the RMS
 * of h; the routed sum (weights sum to 1) and the gated shared expert (sigmoid of an N(0,1)
 * logit) then give an output RMS of about 0.5.
 */
export function moeWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  const H = config.hiddenSize;
  const { numExperts: E, intermediate: I, sharedIntermediate: Is } = config.moe;
  const p = moePrefix(layer);
  const fanIn = (n: number) => ({ kind: 'normal' as const, std: 1 / Math.sqrt(n) });
  return [
    { name: `${p}.gate.weight`, shape: [E, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}.experts.gate_up_proj`, shape: [E, 2 * I, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}.experts.down_proj`, shape: [E, H, I], dtype: 'bf16', init: fanIn(I) },
    { name: `${p}.shared_expert.gate_proj.weight`, shape: [Is, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}.shared_expert.up_proj.weight`, shape: [Is, H], dtype: 'bf16', init: fanIn(H) },
    { name: `${p}.shared_expert.down_proj.weight`, shape: [H, Is], dtype: 'bf16', init: fanIn(Is) },
    { name: `${p}.shared_expert_gate.weight`, shape: [1, H], dtype: 'bf16', init: fanIn(H) },
  ];
}

/** Rank r's expert range [first, first + count) and shared-expert intermediate slice. */
export interface MoeRankPartition {
  firstExpert: number;
  numLocal: number;
  sharedStart: number;
  sharedWidth: number;
}

export function moeRankPartition(config: ModelConfig, rank: number, tp: number): MoeRankPartition {
  const { numExperts: E, sharedIntermediate: Is } = config.moe;
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`moe: tp ${tp} must be a positive integer`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`moe: rank ${rank} is outside [0, ${tp})`);
  if (E % tp !== 0) throw new Error(`moe: tp ${tp} does not divide the ${E} experts of config '${config.name}'`);
  if (Is % tp !== 0) throw new Error(`moe: tp ${tp} does not divide the shared expert intermediate ${Is} of config '${config.name}'`);
  return { firstExpert: (rank * E) / tp, numLocal: E / tp, sharedStart: (rank * Is) / tp, sharedWidth: Is / tp };
}

/**
 * What rank r reads: the replicated router and shared-expert gate; its experts' range of
 * the stacked gate_up_proj and down_proj (axis 0, viewed as [n*2I, H] and [n*H, I]); the
 * shared expert's gate rows and up rows of its intermediate slice (one concatenation of
 * gate_proj and up_proj, two row ranges, gate first) and the matching down_proj columns.
 */
export function moeRankWeights(
  config: ModelConfig,
  layer: number,
  rank: number,
  tp: number,
): Record<'router' | 'expertsGateUp' | 'expertsDown' | 'sharedGateUp' | 'sharedDown' | 'sharedGate', WeightRef> {
  const { firstExpert, numLocal, sharedStart, sharedWidth } = moeRankPartition(config, rank, tp);
  const H = config.hiddenSize;
  const { intermediate: I, sharedIntermediate: Is } = config.moe;
  const p = moePrefix(layer);
  const experts = { axis: 0, ranges: [[firstExpert, firstExpert + numLocal]] as [number, number][] };
  return {
    router: { name: `${p}.gate.weight` },
    expertsGateUp: { name: `${p}.experts.gate_up_proj`, slice: experts, reshape: [numLocal * 2 * I, H] },
    expertsDown: { name: `${p}.experts.down_proj`, slice: experts, reshape: [numLocal * H, I] },
    sharedGateUp: {
      name: `${p}.shared_expert.gate_up_proj`,
      concat: [`${p}.shared_expert.gate_proj.weight`, `${p}.shared_expert.up_proj.weight`],
      slice: {
        axis: 0,
        ranges: [
          [sharedStart, sharedStart + sharedWidth],
          [Is + sharedStart, Is + sharedStart + sharedWidth],
        ],
      },
    },
    sharedDown: { name: `${p}.shared_expert.down_proj.weight`, slice: { axis: 1, ranges: [[sharedStart, sharedStart + sharedWidth]] } },
    sharedGate: { name: `${p}.shared_expert_gate.weight` },
  };
}
