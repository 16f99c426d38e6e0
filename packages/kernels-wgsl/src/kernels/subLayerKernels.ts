// The WGSL planners of the GatedDeltaNet and full-attention sub-layer ops, by op name
// (graph/ops/gdnOps.ts and attentionOps.ts), for merging into WGSL_KERNELS.
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { attnCausalQsaPlanner } from './attentionCausalQsa.ts';
import { attnHeadNormRopeBf16Planner } from './attentionHeadNormRope.ts';
import { attnOutputGatePlanner } from './attentionOutputGate.ts';
import { qsaBlockKeysPlanner } from './attentionQsaBlockKeys.ts';
import { qsaKeptCountPlanner, qsaSelectPlanner } from './attentionQsaSelect.ts';
import { gdnConvSiluPlanner } from './gdnConvSilu.ts';
import { gdnGatedNormPlanner } from './gdnGatedNorm.ts';
import { gdnGatesPlanner } from './gdnGates.ts';
import { gdnRecurrencePlanner } from './gdnRecurrence.ts';

export const GDN_ATTENTION_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  gdnConvSilu: gdnConvSiluPlanner,
  gdnGates: gdnGatesPlanner,
  gdnRecurrence: gdnRecurrencePlanner,
  gdnGatedNorm: gdnGatedNormPlanner,
  attnHeadNormRopeBf16: attnHeadNormRopeBf16Planner,
  qsaBlockKeys: qsaBlockKeysPlanner,
  qsaSelect: qsaSelectPlanner,
  qsaKeptCount: qsaKeptCountPlanner,
  attnCausalQsa: attnCausalQsaPlanner,
  attnOutputGate: attnOutputGatePlanner,
};
