import { describe, expect, it } from 'vitest';
import { layerCases } from '@hcsp/bench/cases';
import { runOnce } from '../../backend/backend.ts';
import { getOpDef } from '../../graph/ops/registry.ts';
import type { Graph } from '../../graph/graph.ts';
import { CpuBackend } from '../cpuBackend.ts';
import { evaluateExact } from './evaluateExact.ts';
import { U_BF16, widen } from '../../../../../test/support/exactChecks.ts';

// The sub-layer cases of packages/bench/src/cases/layerCases.ts (GatedDeltaNet, attention with QSA, its
// row-sharded selection, MoE, PLE; tiny config, tp 2) evaluated in float64 and on the CPU
// reference, every computed value compared. Integer values (QSA selections, MoE ids, n-gram
// ids) must be equal: on these cases no decision is a near-tie. A floating value's relative
// distance ||ref - exact|| / ||exact|| is at most U = 2^-8 per rounding op on its longest
// path from the inputs (a bf16 rounding moves each element by at most U of itself, so the
// norm by at most U of the norm, and these ops carry an incoming relative error through
// without amplifying it beyond the next rounding's budget: measured, the distances grow
// like sqrt(depth) * 0.4 U, well inside); data ops (shards, gathers, copies) add nothing.

const cpu = new CpuBackend();

/** Per value: rounding ops on its longest path from the graph's inputs and weights. */
function depths(graph: Graph): Map<string, number> {
  const d = new Map<string, number>();
  for (const node of graph.nodes) {
    const incoming = Math.max(0, ...node.inputs.map((id) => (id === null ? 0 : (d.get(id) ?? 0))));
    const own = getOpDef(node.op).opClass === 'data' ? 0 : 1;
    for (const id of node.outputs) if (id !== null) d.set(id, incoming + own);
  }
  return d;
}

describe('the sub-layer cases in float64 against the CPU reference', () => {
  for (const c of layerCases()) {
    it(c.name, async () => {
      const keep = c.graph.nodes.flatMap((n) => n.outputs.filter((id): id is string => id !== null));
      const { values } = await runOnce(cpu, c.graph, c.feeds, c.weights, { keep });
      const exact = await evaluateExact(c.graph, c.feeds, c.weights, { keep });
      const depth = depths(c.graph);
      let moved = 0;
      for (const id of keep) {
        const ref = widen(values.get(id)!);
        const ex = exact.get(id)!;
        expect(ex.dtype, id).toBe(ref.dtype);
        expect(ex.shape, id).toEqual(ref.shape);
        if (ref.dtype === 'i32') {
          expect(Array.from(ex.data), id).toEqual(Array.from(ref.data));
          continue;
        }
        let d = 0;
        let n = 0;
        for (let i = 0; i < ex.data.length; i++) {
          d += (ref.data[i] - ex.data[i]) ** 2;
          n += ex.data[i] ** 2;
        }
        const rel = n === 0 ? Math.sqrt(d) : Math.sqrt(d / n);
        if (rel > 0) moved++;
        expect(rel, `${id} (depth ${depth.get(id)})`).toBeLessThanOrEqual(depth.get(id)! * U_BF16);
      }
      // not vacuous: the reference's roundings show in most values
      expect(moved).toBeGreaterThan(keep.length / 2);
    });
  }
});
