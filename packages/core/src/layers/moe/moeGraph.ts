import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import { tiesAttr, type SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { moeRankPartition, moeRankWeights } from './moeWeights.ts';

/** the router's [T, topK] i32 expert ids, `r{rank}/{scope}/topk_ids` (replicated: every rank routes all T rows) */
export const MOE_TOPK_IDS = 'topk_ids';

/**
 * Appends rank ctx.rank's MoE nodes for x [T, H] (bf16, replicated) and returns the rank's
 * PARTIAL [T, H] output: router (replicated) -> routed sum over the rank's experts, shared
 * expert on the rank's intermediate slice, gated by the replicated shared-expert gate.
 * The caller adds the collective.
 */
export function buildMoe(b: GraphBuilder, ctx: SubLayerContext, x: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const H = config.hiddenSize;
  const { numExperts: E, topK, intermediate: I, normTopkProb } = config.moe;
  const { firstExpert, numLocal, sharedWidth } = moeRankPartition(config, rank, tp);
  const w = moeRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);

  const logits = linear('router', x, b.weight(w.router, [E, H]), E);
  const ids = value(MOE_TOPK_IDS, [T, topK], 'i32');
  const weights = value('topk_weights', [T, topK]);
  node('moeRoute', 'route', [logits], [ids, weights], { topK, normTopkProb, ...tiesAttr(ctx) });
  const routed = value('routed', [T, H], 'f32');
  node('moeExperts', 'experts', [x, ids, weights, b.weight(w.expertsGateUp, [numLocal * 2 * I, H]), b.weight(w.expertsDown, [numLocal * H, I])], [routed], {
    firstExpert,
    numLocal,
    intermediate: I,
    ...(ctx.eager ? { bf16Accumulate: true } : {}),
  });
  const sharedGu = linear('shared_gate_up', x, b.weight(w.sharedGateUp, [2 * sharedWidth, H]), 2 * sharedWidth);
  const sharedH = value('shared_h', [T, sharedWidth]);
  node('moeSwiGlu', 'shared_act', [sharedGu], [sharedH]);
  const shared = linear('shared_down', sharedH, b.weight(w.sharedDown, [H, sharedWidth]), H);
  const gateLogit = linear('shared_gate', x, b.weight(w.sharedGate, [1, H]), 1);
  const y = value('out', [T, H]);
  node('moeCombine', 'combine', [routed, shared, gateLogit], [y]);
  return y;
}
