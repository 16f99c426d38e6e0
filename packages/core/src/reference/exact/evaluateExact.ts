// The float64 ("exact") evaluation of a whole graph: hcsp xcheck's third side, against which
// each backend's own error is measured. It walks the graph's nodes in order as GraphSession
// does (graph/graphSession.ts): collectives over every rank at once, host ops like any other
// op (their exact kernels run here), a row-gathered weight (WeightRef.gather 'rows', read by an
// OpDef.gathersRows op) read only at the rows its ids name with the ids renumbered into them,
// and every value freed after its last use (graph/valueLifetimes.ts) unless it is kept, so a
// 48-layer graph fits. Weights are read through the WeightSource as the CPU backend reads them
// (model/resolveWeight.ts: concat, slice, reshape) and widened exactly to float64 (widenTensor);
// each is read when a node first needs it and freed after its last use.
import type { Graph, GraphNode, ValueDecl, ValueId } from '../../graph/graph.ts';
import { getOpDef } from '../../graph/ops/registry.ts';
import { rowRanges } from '../../graph/rowRanges.ts';
import { validateFeeds } from '../../graph/validateFeeds.ts';
import { lastUses } from '../../graph/valueLifetimes.ts';
import { resolveWeightRows } from '../../model/resolveWeight.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { bf16ToF32 } from '../../numerics/bf16.ts';
import { fp8FormatOfDtype, fp8ToF32 } from '../../numerics/fp8.ts';
import { shapeStr, type Tensor } from '../../tensor/tensor.ts';
import type { ExactTensor } from './exactTensor.ts';
import { EXACT_COLLECTIVE_KERNELS, EXACT_KERNELS, exactCollectiveKernel, exactKernel } from './index.ts';

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

function nodeError(e: unknown, node: GraphNode): Error {
  const where = `${node.scope} (${node.op}${node.rank === null ? '' : `, rank ${node.rank}`}): `;
  return new Error(where + (e instanceof Error ? e.message : String(e)), { cause: e });
}

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
  if (!(Number.isInteger(graph.tp) && graph.tp >= 1)) throw new Error(`exact evaluation: graph tp ${graph.tp} is not a positive integer`);
  for (const node of graph.nodes) {
    const table = node.rank === null ? EXACT_COLLECTIVE_KERNELS : EXACT_KERNELS;
    if (!table.has(node.op)) {
      throw new Error(`exact evaluation: no float64 kernel for op '${node.op}'${node.rank === null ? ' (collective)' : ''} (node ${node.id} at ${node.scope})`);
    }
    for (const id of [...node.inputs, ...node.outputs]) {
      if (id !== null && !graph.values[id]) throw new Error(`exact evaluation: node ${node.id} (${node.op} at ${node.scope}) uses undeclared value '${id}'`);
    }
  }
  validateFeeds(graph, feeds);
  const keepAll = options.keep === undefined;
  const keep = new Set<ValueId>(options.keep ?? []);
  for (const id of keep) if (!graph.values[id]) throw new Error(`exact evaluation: requested value '${id}' is not in the graph`);
  const last = lastUses(graph);
  const env = new Map<ValueId, ExactTensor>();
  for (const id of graph.inputs) {
    const given = options.exactFeeds?.get(id);
    const fed = feeds.get(id)!;
    if (given && given.shape.join() !== fed.shape.join())
      throw new Error(`exact evaluation: the float64 feed of '${id}' has shape [${given.shape}], the feed [${fed.shape}]`);
    env.set(id, given ?? widenTensor(fed));
  }

  const value = async (id: ValueId): Promise<ExactTensor> => {
    const have = env.get(id);
    if (have) return have;
    const d = graph.values[id];
    if (d.kind !== 'weight' || !d.weight) throw new Error(`value '${id}' is read before any node produced it`);
    const t = await resolveWeightRows(weights, d.weight);
    const w = widenTensor(t);
    checkDecl(`weight '${d.weight.name}'`, w, d);
    env.set(id, w);
    return w;
  };

  /** A node's inputs; a row-gather op's row-gathered table arrives as the rows its ids name, the ids renumbered. */
  const inputsOf = async (node: GraphNode, ids: (ValueId | null)[]): Promise<(ExactTensor | null)[]> => {
    const gather = getOpDef(node.op).gathersRows;
    const table = gather ? graph.values[ids[gather.table]!] : null;
    const rowGathered = table?.weight?.gather === 'rows';
    const ins: (ExactTensor | null)[] = [];
    for (const [i, id] of ids.entries()) ins.push(id === null || (rowGathered && i === gather!.table) ? null : await value(id));
    if (rowGathered) {
      const idsT = ins[0]!;
      const { ranges, local } = rowRanges(idsT.data as Int32Array, table!.shape[0], `weight '${table!.weight!.name}'`);
      ins[0] = { ...idsT, data: local };
      const rows = widenTensor(await resolveWeightRows(weights, table!.weight!, ranges));
      checkDecl(`rows of weight '${table!.weight!.name}'`, rows, { ...table!, shape: [ranges.reduce((n, [a, b]) => n + b - a, 0), ...table!.shape.slice(1)] });
      ins[gather!.table] = rows;
    }
    return ins;
  };

  const set = (id: ValueId | null, t: ExactTensor | null | undefined): void => {
    if (id === null) return;
    if (!t) throw new Error(`did not produce '${id}'`);
    checkDecl(`output '${id}'`, t, graph.values[id]);
    if (env.has(id)) throw new Error(`value '${id}' is produced twice`);
    env.set(id, t);
  };

  const release = (node: GraphNode, i: number): void => {
    if (keepAll) {
      // keep every input and computed value; weights go after their last use
      for (const id of node.inputs) if (id !== null && last.get(id) === i && graph.values[id].kind === 'weight') env.delete(id);
      return;
    }
    for (const id of node.inputs) if (id !== null && last.get(id) === i && !keep.has(id)) env.delete(id);
    for (const id of node.outputs) if (id !== null && !last.has(id) && !keep.has(id)) env.delete(id);
  };

  for (const [i, node] of graph.nodes.entries()) {
    try {
      if (node.rank === null) {
        const tp = graph.tp;
        const ports = node.inputs.length / tp;
        const outPorts = node.outputs.length / tp;
        const ins: ExactTensor[][] = [];
        for (let r = 0; r < tp; r++) ins.push((await inputsOf(node, node.inputs.slice(r * ports, (r + 1) * ports))) as ExactTensor[]);
        const outs = exactCollectiveKernel(node.op)(ins, { ...node.attrs, tp });
        for (let r = 0; r < tp; r++) for (let p = 0; p < outPorts; p++) set(node.outputs[r * outPorts + p], outs[r]?.[p]);
      } else {
        const outs = exactKernel(node.op)(await inputsOf(node, node.inputs), node.attrs);
        node.outputs.forEach((id, p) => {
          set(id, outs[p]);
        });
      }
    } catch (e) {
      throw nodeError(e, node);
    }
    release(node, i);
    options.onNode?.(i + 1, graph.nodes.length);
    await options.turn?.();
  }

  const result = new Map<ValueId, ExactTensor>();
  if (keepAll) {
    for (const [id, t] of env) if (graph.values[id].kind !== 'weight') result.set(id, t);
    return result;
  }
  for (const id of keep) {
    const t = env.get(id) ?? (graph.values[id].kind === 'weight' ? await value(id) : undefined);
    if (!t) throw new Error(`exact evaluation: requested value '${id}' was never computed`);
    result.set(id, t);
  }
  return result;
}
