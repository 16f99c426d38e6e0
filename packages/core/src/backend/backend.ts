import type { Graph, ValueId } from '../graph/graph.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { WeightSource } from '../model/weightSource.ts';

/** Bytes each rank sent, per collective kind (ring accounting, see collectives/commBytes.ts). */
export interface CommBytes {
  allReduce: number;
  allGather: number;
  reduceScatter: number;
}

export interface RunStats {
  seconds: number;
  /** rows each rank pushed through HC ops (combine-norm rows), summed over the graph */
  hcRowsPerRank: number[];
  commBytesPerRank: CommBytes[];
}

export interface RunOptions {
  /** also return these intermediate values ('all' keeps every value: small graphs only) */
  keep?: ValueId[] | 'all';
  /** called after each node, for progress bars */
  onNode?: (done: number, total: number) => void;
}

export interface RunResult {
  /** graph outputs and kept values */
  values: Map<ValueId, Tensor>;
  stats: RunStats;
}

/**
 * How close this backend's results are to the CPU reference where the accumulation order
 * differs (the test suite takes tolerances from here, as TensorFlow.js does). Where the
 * order is the same every backend must be bit-exact.
 */
export interface BackendPrecision {
  /** max bf16 ulps for an op whose accumulation order differs from the reference */
  reorderedMaxUlp: number;
  /** why: the order this backend uses and where it departs from the reference */
  note: string;
}

/** What every executor (cpu reference, webgpu, native) provides. */
export interface Backend {
  readonly name: string;
  readonly precision: BackendPrecision;
  /** which device runs the graphs, for reports (e.g. "webgpu on headless Chromium (google swiftshader)") */
  describe(): string;
  run(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options?: RunOptions): Promise<RunResult>;
  dispose(): Promise<void>;
}
