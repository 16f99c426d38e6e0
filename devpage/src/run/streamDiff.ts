// The rounding difference of the HC streams between two runs of one forward (SP on vs
// off, or two reduction algorithms), per sub-layer step and per global row. A sharded
// step holds per-rank [C, nH] shards (rank r owns rows [r*C, (r+1)*C), rows at or past T
// are padding); an unsharded one holds the same [T, nH] on every rank. Both are mapped
// back to the T global rows before comparing, so the same row is compared with itself.
import { rowScaledError, type Graph, type SpPlan, type Tensor, type ValueId } from '@hcsp/core';
import { stepStreams } from './stepStreams.ts';

/** What one finished run leaves for the comparison (values: kept by the CpuBackend run). */
export interface RunCapture {
  plan: SpPlan;
  graph: Graph;
  /** DecoderOutputs.streamsPerStep: each step's streams value, one per rank */
  streamsPerStep: ValueId[][];
  /** the gathered exits: final mixer output [T, H] and the MTP state [T, nH] */
  exits: { h: ValueId; mtpState: ValueId | null };
  values: Map<ValueId, Tensor>;
}

/** T global rows of one step's streams, plus what the page checks about the layout. */
export interface GlobalRows {
  data: Uint16Array;
  cols: number;
  sharded: boolean;
  /** nonzero elements found in padding rows (must stay 0) */
  padNonZero: number;
  /** elements where a rank's replicated copy differs from rank 0's (must stay 0) */
  replicaMismatch: number;
}

export interface StepDiff {
  step: string;
  /** whether run a / run b held this step sharded */
  shardedA: boolean;
  shardedB: boolean;
  differing: number;
  count: number;
  /** max over the step's elements of |a - b| in bf16 ulps of the row's largest |b| */
  maxRowUlp: number;
  /** per global row: the row's max row-scale ulp difference (0 = bit-identical) */
  rowUlp: Float64Array;
  /** per global row: elements whose bits differ */
  rowDiffering: Int32Array;
  padNonZeroA: number;
  padNonZeroB: number;
  replicaMismatchA: number;
  replicaMismatchB: number;
}

function valueAt(run: RunCapture, id: ValueId): Tensor {
  const t = run.values.get(id);
  if (!t) throw new Error(`stream diff: value '${id}' was not kept by the run (list it in the run's keep)`);
  if (t.dtype !== 'bf16' || t.shape.length !== 2) throw new Error(`stream diff: '${id}' is ${t.dtype}[${t.shape}], expected a bf16 [rows, cols] tensor`);
  return t;
}

/** Maps one step's per-rank values to the T global rows of the forward. */
export function globalRows(run: RunCapture, perRank: ValueId[]): GlobalRows {
  const { tokens: T, chunk: C, tp } = run.plan;
  if (perRank.length !== tp) throw new Error(`stream diff: a step lists ${perRank.length} values for tp ${tp}`);
  const tensors = perRank.map((id) => valueAt(run, id));
  const [rows, cols] = tensors[0].shape;
  tensors.forEach((t, r) => {
    if (t.shape[0] !== rows || t.shape[1] !== cols)
      throw new Error(`stream diff: rank ${r}'s '${perRank[r]}' is [${t.shape}], rank 0's '${perRank[0]}' is [${rows},${cols}]`);
  });
  const out = new Uint16Array(T * cols);
  let padNonZero = 0;
  let replicaMismatch = 0;
  if (rows === T) {
    const ref = tensors[0].data as Uint16Array;
    out.set(ref);
    for (const t of tensors.slice(1)) {
      const d = t.data as Uint16Array;
      for (let i = 0; i < d.length; i++) if (d[i] !== ref[i]) replicaMismatch++;
    }
    return { data: out, cols, sharded: false, padNonZero, replicaMismatch };
  }
  if (!run.plan.sp || rows !== C) throw new Error(`stream diff: '${perRank[0]}' has ${rows} rows, expected T ${T}${run.plan.sp ? ` or C ${C}` : ''}`);
  tensors.forEach((t, r) => {
    const d = t.data as Uint16Array;
    const real = Math.max(0, Math.min(C, T - r * C));
    out.set(d.subarray(0, real * cols), r * C * cols);
    for (let i = real * cols; i < d.length; i++) if (d[i] !== 0) padNonZero++;
  });
  return { data: out, cols, sharded: true, padNonZero, replicaMismatch };
}

/** Compares a against b (b is the reference: its rows give the scale) over T rows of `cols`. */
function diffRows(step: string, a: GlobalRows, b: GlobalRows, rows: number): StepDiff {
  if (a.cols !== b.cols) throw new Error(`stream diff: step ${step} has ${a.cols} columns in run a and ${b.cols} in run b`);
  const cols = a.cols;
  const rowUlp = new Float64Array(rows);
  const rowDiffering = new Int32Array(rows);
  let differing = 0;
  let maxRowUlp = 0;
  for (let t = 0; t < rows; t++) {
    const e = rowScaledError(a.data.subarray(t * cols, (t + 1) * cols), b.data.subarray(t * cols, (t + 1) * cols), 1, cols);
    rowUlp[t] = e.maxRowUlp;
    rowDiffering[t] = e.differing;
    differing += e.differing;
    maxRowUlp = Math.max(maxRowUlp, e.maxRowUlp);
  }
  return {
    step,
    shardedA: a.sharded,
    shardedB: b.sharded,
    differing,
    count: rows * cols,
    maxRowUlp,
    rowUlp,
    rowDiffering,
    padNonZeroA: a.padNonZero,
    padNonZeroB: b.padNonZero,
    replicaMismatchA: a.replicaMismatch,
    replicaMismatchB: b.replicaMismatch,
  };
}

function sameForward(a: RunCapture, b: RunCapture): void {
  const pa = a.plan;
  const pb = b.plan;
  if (pa.config !== pb.config || pa.tokens !== pb.tokens || pa.tp !== pb.tp || pa.layers.join() !== pb.layers.join()) {
    throw new Error(
      `stream diff: runs are not the same forward (a: ${pa.config} T ${pa.tokens} tp ${pa.tp} layers ${pa.layers}, b: ${pb.config} T ${pb.tokens} tp ${pb.tp} layers ${pb.layers})`,
    );
  }
}

/**
 * Per step (the streams entering each sub-layer's HC step, after the previous pending
 * combine, and the streams entering each PLE layer) and at the gathered exits: how run a
 * differs from run b, row by row.
 */
export function streamDiff(a: RunCapture, b: RunCapture): StepDiff[] {
  sameForward(a, b);
  const T = a.plan.tokens;
  const stepsA = stepStreams(a.graph, a.streamsPerStep);
  const stepsB = stepStreams(b.graph, b.streamsPerStep);
  if (stepsA.length !== stepsB.length) throw new Error(`stream diff: run a has ${stepsA.length} steps, run b ${stepsB.length}`);
  const diffs = stepsA.map((sa, i) => {
    const sb = stepsB[i];
    if (sa.step !== sb.step) throw new Error(`stream diff: step ${i} is ${sa.step} in run a and ${sb.step} in run b`);
    return diffRows(sa.step, globalRows(a, sa.perRank), globalRows(b, sb.perRank), T);
  });
  const exit = (name: string, idA: ValueId, idB: ValueId): StepDiff => {
    const whole = (run: RunCapture, id: ValueId): GlobalRows => {
      const t = valueAt(run, id);
      if (t.shape[0] !== T) throw new Error(`stream diff: exit '${id}' has ${t.shape[0]} rows, expected T ${T}`);
      return { data: t.data as Uint16Array, cols: t.shape[1], sharded: false, padNonZero: 0, replicaMismatch: 0 };
    };
    return diffRows(name, whole(a, idA), whole(b, idB), T);
  };
  if (a.exits.mtpState !== null && b.exits.mtpState !== null) diffs.push(exit('exit: MTP state', a.exits.mtpState, b.exits.mtpState));
  diffs.push(exit('exit: mixer output h', a.exits.h, b.exits.h));
  return diffs;
}
