// Test support: rank `rank` of `tp`'s MoE output computed by the math (moeForwardRank) on the
// rank's weights as resolved from a weight source, the reference the MoE graph and TP tests
// compare against.
import { moeForwardRank, moeRankPartition, moeRankWeights, type ModelConfig, type SyntheticWeightSource, type MoeRankResult, type MoeShape } from '@hcsp/core';

/** The rank's MoE result for x [T, hidden] (bf16 bits) at layer `layer`. */
export function moeRankReference(
  config: ModelConfig,
  layer: number,
  source: SyntheticWeightSource,
  x: Uint16Array,
  T: number,
  rank: number,
  tp: number,
): MoeRankResult {
  const refs = moeRankWeights(config, layer, rank, tp);
  const part = moeRankPartition(config, rank, tp);
  const get = (k: keyof typeof refs) => source.resolve(refs[k]).data as Uint16Array;
  const shape: MoeShape = { hidden: config.hiddenSize, ...config.moe, sharedIntermediate: part.sharedWidth };
  return moeForwardRank(x, T, shape, {
    router: get('router'),
    firstExpert: part.firstExpert,
    numLocal: part.numLocal,
    expertsGateUp: get('expertsGateUp'),
    expertsDown: get('expertsDown'),
    sharedGateUp: get('sharedGateUp'),
    sharedDown: get('sharedDown'),
    sharedGate: get('sharedGate'),
  });
}
