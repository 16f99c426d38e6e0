import type { Tensor } from '../tensor/tensor.ts';

/** A CPU reference kernel for a per-rank op: inputs in the op's port order (null = absent). */
export type CpuKernel = (inputs: (Tensor | null)[], attrs: Record<string, unknown>) => (Tensor | null)[];

/** A CPU reference kernel for a collective: inputs[rank][port] -> outputs[rank][port], in lockstep. */
export type CpuCollectiveKernel = (inputs: Tensor[][], attrs: Record<string, unknown>) => Tensor[][];

export interface CpuKernelTable {
  perRank?: Record<string, CpuKernel>;
  collective?: Record<string, CpuCollectiveKernel>;
}
