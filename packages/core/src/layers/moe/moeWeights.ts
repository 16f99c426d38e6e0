import type { ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';

// MoE checkpoint tensors of layer i (Qwen3-Next names, model.md "MoE") and each rank's slice.

export function moePrefix(layer: number): string {
  return `model.layers.${layer}.mlp`;
}

/**
 * Full tensors of layer `layer`. Synthetic scales (inputs are normed rows, RMS ~1): router
 * std 1/sqrt(H) gives logits ~ N(0,1), a routing that is neither uniform nor one-hot;
 * gate_up std 1/sqrt(H) gives gate and up ~ N(0,1), so h = silu(g) u has RMS ~0.6; down
 * std 1/sqrt(I) keeps o_e at the RMS of h; the routed sum (weights sum to 1) and the gated
 * shared expert (sigmoid of an N(0,1) logit) then give an output RMS of about 0.5.
 */
export function moeWeightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
  const H = config.hiddenSize;
  const { numExperts: E, intermediate: I, sharedIntermediate: Is } = config.moe;
  const p = moePrefix(layer);
  const specs: WeightSpec[] = [{ name: `${p}.gate.weight`, shape: [E, H], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(H) } }];
  for (let e = 0; e < E; e++) {
    specs.push(
      { name: `${p}.experts.${e}.gate_up_proj.weight`, shape: [2 * I, H], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(H) } },
      { name: `${p}.experts.${e}.down_proj.weight`, shape: [H, I], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(I) } },
    );
  }
  specs.push(
    { name: `${p}.shared_expert.gate_up_proj.weight`, shape: [2 * Is, H], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(H) } },
    { name: `${p}.shared_expert.down_proj.weight`, shape: [H, Is], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(Is) } },
    { name: `${p}.shared_expert_gate.weight`, shape: [1, H], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(H) } },
  );
  return specs;
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
 * What rank r reads: the replicated router and shared-expert gate; its experts' gate_up and
 * down stacked along rows (checkpoint tensors concatenated in expert order); the shared
 * expert's gate rows and up rows of its intermediate slice (two ranges, gate first) and
 * the matching down_proj columns.
 */
export function moeRankWeights(config: ModelConfig, layer: number, rank: number, tp: number): Record<'router' | 'expertsGateUp' | 'expertsDown' | 'sharedGateUp' | 'sharedDown' | 'sharedGate', WeightRef> {
  const { firstExpert, numLocal, sharedStart, sharedWidth } = moeRankPartition(config, rank, tp);
  const Is = config.moe.sharedIntermediate;
  const p = moePrefix(layer);
  const experts = Array.from({ length: numLocal }, (_, i) => firstExpert + i);
  const range = `${firstExpert}:${firstExpert + numLocal}`;
  return {
    router: { name: `${p}.gate.weight` },
    expertsGateUp: { name: `${p}.experts[${range}].gate_up_proj.weight`, concat: experts.map((e) => `${p}.experts.${e}.gate_up_proj.weight`) },
    expertsDown: { name: `${p}.experts[${range}].down_proj.weight`, concat: experts.map((e) => `${p}.experts.${e}.down_proj.weight`) },
    sharedGateUp: {
      name: `${p}.shared_expert.gate_up_proj.weight`,
      slice: { axis: 0, ranges: [[sharedStart, sharedStart + sharedWidth], [Is + sharedStart, Is + sharedStart + sharedWidth]] },
    },
    sharedDown: { name: `${p}.shared_expert.down_proj.weight`, slice: { axis: 1, ranges: [[sharedStart, sharedStart + sharedWidth]] } },
    sharedGate: { name: `${p}.shared_expert_gate.weight` },
  };
}
