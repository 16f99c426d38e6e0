// The float64 ("exact") evaluation of a whole graph: hcsp xcheck's third side, against which
// each backend's own error is measured. It is a device (EXACT_DEVICE: handles are float64
// host values) run by core's one execution loop, GraphSession, as every backend is: nodes in
// order, collectives over every rank at once, host ops like any other op (their exact kernels
// run on the device), a row-gathered weight (WeightRef.gather 'rows', read by an
// OpDef.gathersRows op) read only at the rows its ids name, and every value freed after its
// last use unless it is kept. Its weights are read on demand (SessionOptions.weightsOnDemand):
// each when a node first needs it, freed after its last use, so a 48-layer graph fits although
// a float64 weight is 4 times its bf16 bytes. Weights are read through the WeightSource as the
// CPU backend reads them (model/resolveWeight.ts: concat, slice, reshape) and widened exactly
// to float64 (widenTensor) as the device takes them.
import type { DeviceOps } from '../../graph/deviceOps.ts';
import type { Graph, ValueDecl, ValueId } from '../../graph/graph.ts';
import { GraphSession } from '../../graph/graphSession.ts';
import { resolveWeightRows } from '../../model/resolveWeight.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { bf16ToF32 } from '../../numerics/bf16.ts';
import { fp8FormatOfDtype, fp8ToF32 } from '../../numerics/fp8.ts';
import { shapeStr, type Tensor } from '../../tensor/tensor.ts';
import type { ExactTensor } from './exactTensor.ts';
import { EXACT_COLLECTIVE_KERNELS, EXACT_KERNELS } from './exactKernels.ts';

export interface EvaluateExactOptions {
  /** the values to return (and never free); default: every input and computed value (weights only when named) */
  keep?: ValueId[];
  /** called after each node: nodes done, nodes in all */
  onNode?: (done: number, total: number) => void;
  /** called after each node, a promise it returns awaited (RunOptions.turn) */
  turn?: () => Promise<void> | undefined;
  /**
   * float64 values of some inputs, used instead of the widened feeds: inputs that are
   * themselves rounded tables (the bf16 RoPE cos/sin, whose exact values ropeTablesExact gives)
   */
  exactFeeds?: ReadonlyMap<ValueId, ExactTensor>;
}

/**
 * A tensor's values widened exactly to float64 (i32 stays i32): bf16 and fp32 values are
 * doubles already, an fp8 value is decoded to its exact value (an fp8 tensor carries no
 * scale: its per-row scale, where it has one, is a separate f32 tensor).
 */
export function widenTensor(t: Tensor): ExactTensor {
  const shape = [...t.shape];
  switch (t.dtype) {
    case 'i32':
      return { dtype: 'i32', shape, data: Int32Array.from(t.data as Int32Array) };
    case 'f32':
      return { dtype: 'f32', shape, data: Float64Array.from(t.data as Float32Array) };
    case 'bf16': {
      const src = t.data as Uint16Array;
      const data = new Float64Array(src.length);
      for (let i = 0; i < src.length; i++) data[i] = bf16ToF32(src[i]);
      return { dtype: 'bf16', shape, data };
    }
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz': {
      const format = fp8FormatOfDtype(t.dtype);
      const table = Float64Array.from({ length: 256 }, (_, b) => fp8ToF32(b, format));
      const src = t.data as Uint8Array;
      const data = new Float64Array(src.length);
      for (let i = 0; i < src.length; i++) data[i] = table[src[i]];
      return { dtype: t.dtype, shape, data };
    }
  }
}

function checkDecl(what: string, t: ExactTensor, d: ValueDecl): void {
  if (t.dtype !== d.dtype || shapeStr(t.shape) !== shapeStr(d.shape)) {
    throw new Error(`${what} is ${t.dtype}${shapeStr(t.shape)}, the graph declares ${d.dtype}${shapeStr(d.shape)} for '${d.id}'`);
  }
  const want = d.dtype === 'i32' ? Int32Array : Float64Array;
  if (!(t.data instanceof want)) throw new Error(`${what} holds ${t.data.constructor.name} data, an exact ${d.dtype} value holds ${want.name}`);
  if (t.data.length !== t.shape.reduce((a, b) => a * b, 1)) throw new Error(`${what} has ${t.data.length} values for shape ${shapeStr(t.shape)}`);
}

/** A kernel's output for port declaration d (null: an absent port), checked against it. */
function checked(t: ExactTensor | null | undefined, d: ValueDecl | null): ExactTensor | null {
  if (d === null) return null;
  if (!t) throw new Error(`did not produce '${d.id}'`);
  checkDecl(`output '${d.id}'`, t, d);
  return t;
}

/**
 * The float64 kernels as a device: handles are float64 host values (ExactTensor), every host
 * op runs on it (its exact kernel), collectives take every rank's value in lockstep. Its
 * values are read with GraphSession.runHeld; a download gives back only integer values (a
 * row-gather's ids), since narrowing a float64 value to its declared dtype would round it.
 */
export const EXACT_DEVICE: DeviceOps<ExactTensor> = {
  upload: async (_decl, t) => widenTensor(t),
  runNode: async (node, inputs, _inputDecls, outputs) => {
    const out = EXACT_KERNELS.get(node.op)(inputs, node.attrs);
    return outputs.map((d, p) => checked(out[p], d));
  },
  runsHostOp: () => true,
  runCollective: async (node, inputs, _inputDecls, outputs) => {
    const out = EXACT_COLLECTIVE_KERNELS.get(node.op)(inputs, { ...node.attrs, tp: inputs.length });
    return outputs.map((ds, r) => ds.map((d, p) => checked(out[r]?.[p], d)!));
  },
  download: async (decl, h) => {
    if (!(h.data instanceof Int32Array))
      throw new Error(`exact: value '${decl.id}' is float64; it is read as such (GraphSession.runHeld), not rounded to ${decl.dtype}`);
    return { dtype: 'i32', shape: [...h.shape], data: Int32Array.from(h.data) };
  },
  free: () => {},
};

/**
 * Every kept value of a whole graph (graph.rank unset) evaluated in float64 with none of the
 * reference's roundings, on the same feeds and weights. A rank's part of a graph is refused:
 * its collectives need the other ranks' partials, which only the whole graph holds.
 */
export async function evaluateExact(
  graph: Graph,
  feeds: ReadonlyMap<ValueId, Tensor>,
  weights: WeightSource,
  options: EvaluateExactOptions = {},
): Promise<Map<ValueId, ExactTensor>> {
  if (graph.rank !== undefined) {
    throw new Error(
      `exact evaluation: the graph is rank ${graph.rank}'s part; only a whole graph (every rank, graph.rank unset) can be evaluated, since its collectives need every rank's partials`,
    );
  }
  for (const node of graph.nodes) {
    const table = node.rank === null ? EXACT_COLLECTIVE_KERNELS : EXACT_KERNELS;
    if (!table.has(node.op)) {
      throw new Error(`exact evaluation: no float64 kernel for op '${node.op}'${node.rank === null ? ' (collective)' : ''} (node ${node.id} at ${node.scope})`);
    }
  }
  const given = new Map<ValueId, ExactTensor>();
  for (const id of graph.inputs) {
    const exact = options.exactFeeds?.get(id);
    const fed = feeds.get(id);
    if (!exact || !fed) continue;
    if (exact.shape.join() !== fed.shape.join())
      throw new Error(`exact evaluation: the float64 feed of '${id}' has shape [${exact.shape}], the feed [${fed.shape}]`);
    given.set(id, exact);
  }
  const readWeight = async (decl: ValueDecl, rows?: [number, number][]) => resolveWeightRows(weights, decl.weight!, rows);
  // a kept weight is read after the run, as it is stored (the run holds a weight only while nodes read it)
  const keptWeights = (options.keep ?? []).filter((id) => graph.values[id]?.kind === 'weight');
  const session = await GraphSession.open(graph, EXACT_DEVICE, readWeight, { backend: 'exact evaluation', weightsOnDemand: true });
  try {
    const { values } = await session.runHeld(new Map(feeds), {
      keep: options.keep?.filter((id) => !keptWeights.includes(id)) ?? 'all',
      onNode: options.onNode,
      turn: options.turn,
      given,
    });
    if (options.keep === undefined) return values;
    const result = new Map<ValueId, ExactTensor>();
    for (const id of options.keep) {
      const d = graph.values[id];
      const t = d.kind === 'weight' ? widenTensor(await readWeight(d)) : values.get(id)!;
      if (d.kind === 'weight') checkDecl(`weight '${d.weight!.name}'`, t, d);
      result.set(id, t);
    }
    return result;
  } finally {
    await session.dispose();
  }
}
