// The float64 evaluation of a graph (hcsp xcheck's "exact" side): every op's math in double
// precision with none of the reference's bf16/fp32 roundings, so that each backend's error can
// be measured against the value the model means. A value of any floating dtype is held as
// float64; integer values (token ids, selections, routes) as int32, as the graph declares them.
import type { KernelsFor } from '../../graph/kernelTable.ts';
import type { DType } from '../../tensor/tensor.ts';

export interface ExactTensor {
  /** the dtype the graph declares for the value (bf16, f32, fp8: the data is float64 regardless) */
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Float64Array for floating dtypes, Int32Array for i32 */
  readonly data: Float64Array | Int32Array;
}

/** A float64 kernel for a per-rank op: inputs in the op's port order (null = absent). */
export type ExactKernel = (inputs: (ExactTensor | null)[], attrs: Record<string, unknown>) => (ExactTensor | null)[];

/** A float64 kernel for a collective: inputs[rank][port] -> outputs[rank][port]. */
export type ExactCollectiveKernel = (inputs: ExactTensor[][], attrs: Record<string, unknown>) => ExactTensor[][];

/** One family file's float64 kernels, keyed by the declared ops. */
export interface ExactKernelTable {
  perRank?: KernelsFor<ExactKernel>;
  collective?: KernelsFor<ExactCollectiveKernel>;
}
