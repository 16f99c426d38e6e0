import { describe, expect, it } from 'vitest';
import { SMALL } from '../../config/presets.ts';
import { buildCostGraph } from '../../costModel/forecast.ts';
import { priceNode } from '../../costModel/pricing/index.ts';
import { rankGraph } from '../rankGraph.ts';
import { allOpDefs, getOpDef } from './registry.ts';

// OpDef.costFamily is where the cost model's breakdown, the bench and the host's GEMM
// accounting read an op's kind; these checks tie it to the facts it summarizes.
describe('cost families', () => {
  it('the collectives are exactly the ops declaring a collective layout', () => {
    const wrong = allOpDefs().filter((d) => (d.costFamily === 'collective') !== (d.collective !== undefined));
    expect(wrong.map((d) => d.name)).toEqual([]);
  });

  it("the 'gemm' family is exactly the ops the cost model prices as one library GEMM on a weight matrix", () => {
    const { graph } = buildCostGraph(SMALL, 64, 2, 'on', true);
    const part = rankGraph(graph, 0);
    const ctx = { config: SMALL, tp: 2, values: part.values, requests: 1, requestTokens: 64 };
    const wrong = new Set<string>();
    const seen = new Set<string>();
    for (const node of part.nodes) {
      const gemms = priceNode(node, ctx).gemms ?? [];
      const plainGemm = gemms.length === 1 && gemms[0].rows.length === 1;
      if (plainGemm !== (getOpDef(node.op).costFamily === 'gemm')) wrong.add(node.op);
      if (plainGemm) seen.add(node.op);
    }
    expect([...wrong]).toEqual([]);
    expect([...seen]).toContain('linear');
  });
});
