import type { KernelsFor } from '../graph/kernelTable.ts';
import type { Tensor } from '../tensor/tensor.ts';

/** A CPU reference kernel for a per-rank op: inputs in the op's port order (null = absent). */
export type CpuKernel = (inputs: (Tensor | null)[], attrs: Record<string, unknown>) => (Tensor | null)[];

/** A CPU reference kernel for a collective: inputs[rank][port] -> outputs[rank][port], in lockstep. */
export type CpuCollectiveKernel = (inputs: Tensor[][], attrs: Record<string, unknown>) => Tensor[][];

/** One family file's CPU kernels, keyed by the declared ops. */
export interface CpuKernelTable {
  perRank?: KernelsFor<CpuKernel>;
  collective?: KernelsFor<CpuCollectiveKernel>;
}
