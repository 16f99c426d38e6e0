// The WGSL planners of the FP8 PTPC ops (core graph/ops/quantOps.ts): per-token and
// per-channel quantization, and the PTPC GEMM.
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { fp8LinearPtpcPlanner } from './fp8LinearPtpc.ts';
import { fp8QuantWeightPerChannelPlanner, hcGatedMeanQuantPlanner, quantFp8PerTokenPlanner } from './quantFp8.ts';

export const QUANT_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  quantFp8PerToken: quantFp8PerTokenPlanner,
  hcGatedMeanQuant: hcGatedMeanQuantPlanner,
  fp8QuantWeightPerChannel: fp8QuantWeightPerChannelPlanner,
  fp8LinearPtpc: fp8LinearPtpcPlanner,
};
