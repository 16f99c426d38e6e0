// The WGSL planners of the MoE and PLE ops (core graph/ops/moeOps.ts, pleOps.ts), by op name.
// pleNgramIds (64-bit hashing: WGSL has no int64) and pleNgramEmbed (rows read from the
// checkpoint as the ids need them) are host ops: they have no WGSL kernel. A vocab-parallel
// table's slice lookup (pleNgramEmbedShard) has one.
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { moeCombinePlanner } from './moeCombine.ts';
import { moeExpertsPlanner } from './moeExperts.ts';
import { moeExpertsFp8PtpcPlanner } from './moeExpertsFp8Ptpc.ts';
import { moeRoutePlanner } from './moeRoute.ts';
import { moeSwiGluPlanner } from './moeSwiGlu.ts';
import { pleConvSiluPlanner } from './pleConvSilu.ts';
import { pleGatePlanner } from './pleGate.ts';
import { pleGatedValuePlanner } from './pleGatedValue.ts';
import { pleNgramEmbedShardPlanner } from './pleNgramEmbedShard.ts';
import { pleRms1pNormPlanner } from './pleRms1pNorm.ts';

export const MOE_PLE_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  moeRoute: moeRoutePlanner,
  moeExperts: moeExpertsPlanner,
  moeExpertsFp8Ptpc: moeExpertsFp8PtpcPlanner,
  moeSwiGlu: moeSwiGluPlanner,
  moeCombine: moeCombinePlanner,
  pleNgramEmbedShard: pleNgramEmbedShardPlanner,
  pleRms1pNorm: pleRms1pNormPlanner,
  pleGate: pleGatePlanner,
  pleGatedValue: pleGatedValuePlanner,
  pleConvSilu: pleConvSiluPlanner,
};
