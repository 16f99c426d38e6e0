import type { WeightSlice } from '../graph/graph.ts';
import type { DType, Tensor } from '../tensor/tensor.ts';

/** Shape and dtype of a checkpoint tensor, known without reading its data. */
export interface WeightInfo {
  shape: readonly number[];
  dtype: DType;
}

/**
 * Where checkpoint tensors come from (synthetic, or .safetensors files). Reads are async and
 * slice-aware: a rank asks only for its rows/columns, and a file-backed source reads only
 * those bytes.
 */
export interface WeightSource {
  has(name: string): boolean;
  /** the tensor's shape and dtype, or a clear error naming it when it is missing */
  info(name: string): WeightInfo;
  /** the tensor, or only `slice` of it (ranges along one axis, concatenated in order) */
  read(name: string, slice?: WeightSlice): Promise<Tensor>;
}
