import type { Graph, ValueId } from '../graph/graph.ts';
import type { ToleranceClass } from '../graph/ops/opDef.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { WeightSource } from '../model/weightSource.ts';

/** Bytes each rank sent, per collective kind (ring accounting, see collectives/commBytes.ts). */
export interface CommBytes {
  allReduce: number;
  allGather: number;
  reduceScatter: number;
}

/** What a device did, as its own counters tell (native/src/host/memory.h's DeviceCounters). */
export interface DeviceCounters {
  kernelLaunches: number;
  hostSyncs: number;
  deviceAllocations: number;
  deviceFrees: number;
  memsets: number;
  copiesToDevice: number;
  bytesToDevice: number;
  copiesFromDevice: number;
  bytesFromDevice: number;
}

/** What a run cost beyond its kernels: counted at the device seam by the loop, and by the device itself. */
export interface EngineStats {
  /** opening the session: weights read and uploaded, the memory plan reserved */
  prepareSeconds: number;
  /** host time in the run outside waits and host ops: enqueueing the nodes (or the recording's replay) */
  enqueueSeconds: number;
  /** the run was one replay of the device's recording of it (DeviceOps.record), not a call per node */
  recorded: boolean;
  /** host time waiting for the device (syncs, downloads) */
  waitSeconds: number;
  /** host time in host ops (core's CPU kernels, e.g. the PLE lookup) and a rank's communicator calls */
  hostOpSeconds: number;
  /** host <-> device bytes through the loop: the graph's inputs in, the values read back out, and host ops' staging both ways */
  transfers: { inputBytes: number; outputBytes: number; stagingToDeviceBytes: number; stagingFromDeviceBytes: number };
  /** the device's counters over the run (null: the device keeps none) */
  device: DeviceCounters | null;
  /** what the session reserved for the run's values (graph/memoryPlan.ts) */
  memoryPlan: { poolBytes: number; peakBytes: number; blocks: number };
  /** the session's weights placed on the device at open (absent: a device that does not say) */
  weightLoad?: WeightLoadStats;
}

/**
 * Weights placed on the device when a session opened: `bytes` of tensors in `seconds` (reads,
 * checks and copies); `native` of the `tensors` by the device's own loader (DeviceOps.loadWeights),
 * `js` read in JavaScript and uploaded one by one.
 */
export interface WeightLoadStats {
  seconds: number;
  bytes: number;
  gbPerSecond: number;
  tensors: number;
  native: number;
  js: number;
}

export interface RunStats {
  seconds: number;
  /** the engine's counters over this run */
  engine?: EngineStats;
  /** rows each rank pushed through HC ops (combine-norm rows), summed over the graph */
  hcRowsPerRank: number[];
  commBytesPerRank: CommBytes[];
}

export interface RunOptions {
  /** also read back these intermediate values ('all' keeps every value: small graphs only) */
  keep?: ValueId[] | 'all';
  /**
   * leave these values on the device after the run (PreparedGraph.read reads one back);
   * they stay until the next run or dispose
   */
  keepOnDevice?: ValueId[];
  /** called after each node, for progress bars */
  onNode?: (done: number, total: number) => void;
  /**
   * wait for the device after every node, so that onNode marks each node's own time (a
   * profile: a host sync per node, which a run otherwise makes once, at its end)
   */
  syncEachNode?: boolean;
  /**
   * called after each node; a promise it returns is awaited before the next node (a caller
   * computing on this thread gives its event loop a turn there, so that signal handlers run)
   */
  turn?: () => Promise<void> | undefined;
}

export interface RunResult {
  /** graph outputs and kept values */
  values: Map<ValueId, Tensor>;
  stats: RunStats;
}

/** A graph made ready on a backend: its weights and buffers stay resident across runs. */
export interface PreparedGraph {
  readonly graph: Graph;
  run(feeds: Map<ValueId, Tensor>, options?: RunOptions): Promise<RunResult>;
  /** a value the last run left on the device (RunOptions.keepOnDevice) */
  read(id: ValueId): Promise<Tensor>;
  dispose(): Promise<void>;
}

/** A tolerance of one op class, and why this backend needs it. */
export interface ClassPrecision {
  /** max bf16 ulps (of the row's largest value) for an op of this class whose order differs from the reference */
  maxUlp: number;
  note: string;
}

/**
 * How close this backend's results are to the CPU reference, per op class (OpDef.opClass),
 * where its accumulation order differs (the test suites take tolerances from here, as
 * TensorFlow.js does). 'data' ops (copies, gathers, shards) are bit-exact on every backend.
 * Where the order is the same every backend must be bit-exact: maxUlp 0.
 */
export type BackendPrecision = Readonly<Record<ToleranceClass, ClassPrecision>>;

/** Every class bit-exact, for a backend that keeps the reference's order everywhere. */
export function exactPrecision(note: string): BackendPrecision {
  const c = { maxUlp: 0, note };
  return { gemm: c, reduction: c, sequence: c, elementwise: c, quant: c };
}

/** What every executor (cpu reference, webgpu, native) provides. */
export interface Backend {
  readonly name: string;
  readonly precision: BackendPrecision;
  /** which device runs the graphs, for reports (e.g. "webgpu on headless Chromium (google swiftshader)") */
  describe(): string;
  /** uploads the weights the graph reads (each rank only its slices) and makes it ready to run */
  prepare(graph: Graph, weights: WeightSource): Promise<PreparedGraph>;
  dispose(): Promise<void>;
}

/** Prepare, run once, dispose: for one-shot callers (tests, the CLI). */
export async function runOnce(backend: Backend, graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options?: RunOptions): Promise<RunResult> {
  const prepared = await backend.prepare(graph, weights);
  try {
    return await prepared.run(feeds, options);
  } finally {
    await prepared.dispose();
  }
}
