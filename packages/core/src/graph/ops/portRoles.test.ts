import { describe, expect, it } from 'vitest';
import { SMALL, TINY } from '../../config/presets.ts';
import { buildCostGraph } from '../../costModel/forecast.ts';
import { keepFp8Weights } from '../../model/fp8WeightLinears.ts';
import type { Graph } from '../graph.ts';
import { portsWithRole } from './opDef.ts';
import { getOpDef } from './registry.ts';

/** The model's graphs: both presets, tp 1 and 2, SP off and on, with and without MTP, plain and with every weight FP8. */
function modelGraphs(): Graph[] {
  const graphs: Graph[] = [];
  for (const config of [TINY, SMALL])
    for (const tp of [1, 2])
      for (const sp of ['off', 'on'] as const)
        for (const mtp of [false, true]) {
          const { graph } = buildCostGraph(config, 64, tp, sp, mtp);
          graphs.push(graph);
          const fp8 = keepFp8Weights(graph, {
            has: () => true,
            info: () => ({ shape: [1], dtype: 'bf16' }),
            read: () => Promise.reject(new Error('the rewrite reads no weight')),
            fp8PerChannel: (name) => ({ q: `${name}#fp8`, scale: `${name}#fp8_scale`, format: 'e4m3fn' }),
          });
          graphs.push(fp8.graph);
        }
  return graphs;
}

describe("input ports' roles", () => {
  const graphs = modelGraphs();

  it('every weight value the model reads sits on a port declared weight; a weight port reads weights or values made from weights alone', () => {
    const wrong: string[] = [];
    const ops = new Set<string>();
    for (const g of graphs) {
      // values computed from weights alone (a weight quantized in the graph)
      const fromWeights = new Set(Object.values(g.values).flatMap((v) => (v.kind === 'weight' ? [v.id] : [])));
      for (const n of g.nodes) {
        ops.add(n.op);
        const weightPorts = portsWithRole(getOpDef(n.op), 'weight');
        n.inputs.forEach((id, port) => {
          if (id === null) return;
          const isWeight = g.values[id].kind === 'weight';
          if (isWeight && !weightPorts.includes(port)) wrong.push(`${n.op} input ${port}: a weight on an activation port`);
          if (weightPorts.includes(port) && !fromWeights.has(id)) wrong.push(`${n.op} input ${port}: an activation on a weight port`);
        });
        if (n.inputs.every((id) => id === null || fromWeights.has(id))) for (const id of n.outputs) if (id !== null) fromWeights.add(id);
      }
    }
    expect([...new Set(wrong)]).toEqual([]);
    // the graphs reach the FP8 ops, whose weight ports are the ones easiest to get wrong
    expect([...ops]).toEqual(expect.arrayContaining(['linear', 'fp8LinearPtpc', 'moeExperts', 'moeExpertsFp8Ptpc', 'embed', 'pleNgramEmbed']));
  });
});
