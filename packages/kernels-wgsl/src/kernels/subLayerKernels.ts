// The WGSL planners of the GatedDeltaNet and full-attention sub-layer ops, by op name
// (graph/ops/gdnOps.ts and attentionOps.ts), for merging into WGSL_KERNELS.
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { attnCausalPlanner } from './attentionCausal.ts';
import { attnHeadNormRopePlanner } from './attentionHeadNormRope.ts';
import { attnOutputGatePlanner } from './attentionOutputGate.ts';
import { gdnConvSiluPlanner } from './gdnConvSilu.ts';
import { gdnGatedNormPlanner } from './gdnGatedNorm.ts';
import { gdnGatesPlanner } from './gdnGates.ts';
import { gdnRecurrencePlanner } from './gdnRecurrence.ts';

export const GDN_ATTENTION_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  gdnConvSilu: gdnConvSiluPlanner,
  gdnGates: gdnGatesPlanner,
  gdnRecurrence: gdnRecurrencePlanner,
  gdnGatedNorm: gdnGatedNormPlanner,
  attnHeadNormRope: attnHeadNormRopePlanner,
  attnCausal: attnCausalPlanner,
  attnOutputGate: attnOutputGatePlanner,
};
