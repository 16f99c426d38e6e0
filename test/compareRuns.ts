import { compareBf16, getOpDef, type Backend, type Graph, type RunResult, type Tensor } from '@hcsp/core';

/** One value that differs between a backend and the reference, with its ulp distribution. */
export interface ValueDifference {
  id: string;
  op: string;
  scope: string;
  differing: number;
  count: number;
  maxUlp: number;
  histogram: Record<string, number>;
}

function bytesOf(t: Tensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/**
 * Compares every value the two runs kept, op by op (values are tagged with the node that
 * wrote them), and returns those whose bits differ, with the distribution for bf16 values.
 */
export function diffRuns(graph: Graph, reference: RunResult, actual: RunResult): { compared: number; differences: ValueDifference[] } {
  const producer = new Map<string, { op: string; scope: string }>();
  for (const n of graph.nodes) for (const id of n.outputs) if (id) producer.set(id, { op: n.op, scope: n.scope });
  const differences: ValueDifference[] = [];
  let compared = 0;
  for (const [id, ref] of reference.values) {
    const got = actual.values.get(id);
    if (!got) throw new Error(`value '${id}' is missing from the backend's results`);
    compared++;
    const a = bytesOf(got);
    const e = bytesOf(ref);
    if (a.length === e.length && a.every((v, i) => v === e[i])) continue;
    const where = producer.get(id) ?? { op: 'input', scope: id };
    if (ref.dtype === 'bf16' && got.dtype === 'bf16') {
      const r = compareBf16(got.data as Uint16Array, ref.data as Uint16Array);
      differences.push({ id, ...where, differing: r.differing, count: r.count, maxUlp: r.maxUlp, histogram: r.histogram as Record<string, number> });
    } else {
      differences.push({ id, ...where, differing: -1, count: ref.data.length, maxUlp: Infinity, histogram: {} });
    }
  }
  return { compared, differences };
}

/** A readable summary of differences for an assertion message. */
export function describeDifferences(diffs: ValueDifference[]): string {
  return diffs
    .slice(0, 20)
    .map((d) => `${d.scope} (${d.op}) ${d.id}: ${d.differing}/${d.count} differ, max ${d.maxUlp} ulp, histogram ${JSON.stringify(d.histogram)}`)
    .join('\n');
}

/**
 * The differences a backend's declared precision does not allow: the tolerance of the op
 * class of the node that produced the value (tolerances come from the backend, not the test);
 * 'data' ops (copies, gathers, shards) are bit-exact on every backend.
 */
export function beyondTolerance(diffs: ValueDifference[], backend: Backend): ValueDifference[] {
  return diffs.filter((d) => {
    const cls = getOpDef(d.op).opClass;
    const tol = cls === 'data' ? 0 : backend.precision[cls].maxUlp;
    // at 0 every changed bit counts, -0 vs +0 included
    return tol === 0 || !(d.maxUlp <= tol);
  });
}
