// A backend's run against the reference run of the same graph, value by value (the
// cross-backend suites and the GPU check): which values differ, where each difference starts,
// and which of those the backend's declared precision does not allow.
import type { Backend, RunResult } from '../backend/backend.ts';
import type { Graph } from '../graph/graph.ts';
import { getOpDef } from '../graph/ops/registry.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { compareBf16 } from '../numerics/ulp.ts';
import type { Tensor } from '../tensor/tensor.ts';

/** One value that differs between a backend and the reference, with its ulp distribution. */
export interface ValueDifference {
  id: string;
  op: string;
  scope: string;
  differing: number;
  count: number;
  maxUlp: number;
  /** max |a - e| in bf16 ulps of the largest |e| of its row (last dimension): the unit of a reordered sum */
  rowUlp: number;
  histogram: Record<string, number>;
  /** every input of the producing node was bit-identical to the reference's: the difference starts here */
  originates: boolean;
}

function bytesOf(t: Tensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/**
 * Compares every value the two runs kept, op by op (values are tagged with the node that
 * wrote them), and returns those whose bits differ, with the distribution for bf16 values.
 */
export function diffRuns(graph: Graph, reference: RunResult, actual: RunResult): { compared: number; differences: ValueDifference[] } {
  const producer = new Map<string, { op: string; scope: string; inputs: (string | null)[] }>();
  for (const n of graph.nodes) for (const id of n.outputs) if (id) producer.set(id, { op: n.op, scope: n.scope, inputs: n.inputs });
  const differences: ValueDifference[] = [];
  const differs = new Set<string>();
  let compared = 0;
  for (const [id, ref] of reference.values) {
    const got = actual.values.get(id);
    if (!got) throw new Error(`value '${id}' is missing from the backend's results`);
    compared++;
    const a = bytesOf(got);
    const e = bytesOf(ref);
    if (a.length === e.length && a.every((v, i) => v === e[i])) continue;
    differs.add(id);
  }
  // in graph order, so a node's inputs are judged before its outputs
  const order = [...reference.values.keys()].filter((id) => differs.has(id));
  for (const id of order) {
    const ref = reference.values.get(id)!;
    const got = actual.values.get(id)!;
    const p = producer.get(id);
    const where = p ? { op: p.op, scope: p.scope } : { op: 'input', scope: id };
    const originates = !p || p.inputs.every((i) => i === null || !differs.has(i));
    if (ref.dtype === 'bf16' && got.dtype === 'bf16') {
      const r = compareBf16(got.data as Uint16Array, ref.data as Uint16Array);
      const cols = ref.shape.length ? ref.shape[ref.shape.length - 1] : 1;
      const rowUlp = rowScaledError(got.data as Uint16Array, ref.data as Uint16Array, ref.data.length / Math.max(cols, 1), cols).maxRowUlp;
      differences.push({
        id,
        ...where,
        differing: r.differing,
        count: r.count,
        maxUlp: r.maxUlp,
        rowUlp,
        histogram: r.histogram as Record<string, number>,
        originates,
      });
    } else {
      differences.push({ id, ...where, differing: -1, count: ref.data.length, maxUlp: Infinity, rowUlp: Infinity, histogram: {}, originates });
    }
  }
  return { compared, differences };
}

/** A readable summary of differences for an assertion message. */
export function describeDifferences(diffs: ValueDifference[]): string {
  return diffs
    .slice(0, 20)
    .map(
      (d) =>
        `${d.scope} (${d.op}) ${d.id}${d.originates ? '' : ' [inherited]'}: ${d.differing}/${d.count} differ, max ${d.maxUlp} ulp (${d.rowUlp} row-scaled), histogram ${JSON.stringify(d.histogram)}`,
    )
    .join('\n');
}

/**
 * The differences a backend's declared precision does not allow. Each difference is judged
 * where it starts: a node whose inputs all equal the reference's must produce values within
 * the tolerance of its op class (tolerances come from the backend, not the test; in
 * row-scaled bf16 ulps, the unit of a reordered sum); 'data' ops (copies, gathers, shards)
 * are bit-exact on every backend. A node fed values that already differ inherits the
 * difference and is not judged again: on a bit-exact backend there are none, since the first
 * difference anywhere fails at its origin.
 */
export function beyondTolerance(diffs: ValueDifference[], backend: Backend): ValueDifference[] {
  return diffs.filter((d) => {
    if (!d.originates) return false;
    if (d.op === 'input') return true;
    const cls = getOpDef(d.op).opClass;
    const tol = cls === 'data' ? 0 : backend.precision[cls].maxUlp;
    // at 0 every changed bit counts, -0 vs +0 included
    return tol === 0 || !(d.rowUlp <= tol);
  });
}
