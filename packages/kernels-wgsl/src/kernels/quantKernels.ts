// The WGSL planners of the per-token fp8 quantization ops (core graph/ops/quantOps.ts).
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { hcGatedMeanQuantPlanner, quantFp8PerTokenPlanner } from './quantFp8.ts';

export const QUANT_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  quantFp8PerToken: quantFp8PerTokenPlanner,
  hcGatedMeanQuant: hcGatedMeanQuantPlanner,
};
