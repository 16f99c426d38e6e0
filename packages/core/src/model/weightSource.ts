import type { WeightSlice } from '../graph/graph.ts';
import type { DType, Tensor } from '../tensor/tensor.ts';

/** Shape and dtype of a checkpoint tensor, known without reading its data. */
export interface WeightInfo {
  shape: readonly number[];
  dtype: DType;
}

/** `bytes` bytes of `file` from `offset`. */
export interface FileRun {
  file: string;
  /** the file's "device:inode" when the source opened it: a reader opening `file` again checks it is still that file */
  identity?: string;
  offset: number;
  bytes: number;
}

/**
 * Where a read lies in files when it is a plain copy: the runs' bytes, concatenated in
 * order, are the tensor's bytes (little-endian, as stored), with nothing to convert. A
 * native loader reads them itself (its own threads, no JavaScript in between).
 */
export interface WeightFilePlan {
  dtype: DType;
  shape: number[];
  runs: FileRun[];
}

/** What a loader found reading a WeightFilePlan itself: file bytes read, NaN and Inf elements. */
export interface PlannedReadFindings {
  bytes: number;
  nan: number;
  inf: number;
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
  /**
   * read(name, slice) as file byte runs, when it is a plain copy of stored bytes; null when it
   * converts (FP8 dequantization, fp32 -> bf16) or is not read from a file
   */
  filePlan?(name: string, slice?: WeightSlice): WeightFilePlan | null;
  /**
   * A loader read filePlan(name, slice) itself: the source accounts for it as for its own
   * read (bytes read, the NaN/Inf findings); throwing refuses the weight.
   */
  plannedRead?(name: string, slice: WeightSlice | undefined, found: PlannedReadFindings): void;
}
