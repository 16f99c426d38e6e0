// The WGSL kernels: one planner per op of core's vocabulary that this package implements.
import { KernelTable } from '@hcsp/core';
import type { KernelPlanner } from './kernelProgram.ts';
import { addPlanner, hcCombinePlanner, hcGatedMeanPlanner, hcScaledSiluPlanner } from './kernels/elementwiseBf16.ts';
import { allGatherPlanner, hcExpandPlanner, padPlanner, shardPlanner, sliceColsPlanner, trimPlanner } from './kernels/copyElements.ts';
import { embedPlanner } from './kernels/embed.ts';
import { hcCombineNormPlanner } from './kernels/hcCombineNorm.ts';
import { HEAD_WGSL_KERNELS } from './kernels/headKernels.ts';
import { linearPlanner } from './kernels/linear.ts';
import { allReducePlanner, reduceScatterPlanner } from './kernels/reduceCollectives.ts';
import { MOE_PLE_WGSL_KERNELS } from './kernels/moePleKernels.ts';
import { QUANT_WGSL_KERNELS } from './kernels/quantKernels.ts';
import { GDN_ATTENTION_WGSL_KERNELS } from './kernels/subLayerKernels.ts';

export * from './kernelProgram.ts';
export { checkedPlanner } from './checkedPlanner.ts';
export { planLinear, tilingName, DEFAULT_LINEAR_TILING, DEFAULT_WORKGROUP_TILING, type LinearTiling, type WorkgroupTiling } from './kernels/linear.ts';

/** Every WGSL planner, keyed by core's declared ops (duplicates and undeclared names are refused). */
export const WGSL_KERNELS = new KernelTable<KernelPlanner>('webgpu', [
  {
    linear: linearPlanner,
    add: addPlanner,
    sliceCols: sliceColsPlanner,
    embed: embedPlanner,
    hcExpand: hcExpandPlanner,
    hcCombineNorm: hcCombineNormPlanner,
    hcScaledSilu: hcScaledSiluPlanner,
    hcGatedMean: hcGatedMeanPlanner,
    hcCombine: hcCombinePlanner,
    shard: shardPlanner,
    pad: padPlanner,
    trim: trimPlanner,
    allReduce: allReducePlanner,
    reduceScatter: reduceScatterPlanner,
    allGather: allGatherPlanner,
  },
  GDN_ATTENTION_WGSL_KERNELS,
  MOE_PLE_WGSL_KERNELS,
  QUANT_WGSL_KERNELS,
  HEAD_WGSL_KERNELS,
]);
