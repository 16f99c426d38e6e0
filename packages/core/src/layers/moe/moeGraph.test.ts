import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import type { Graph, ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { resolveWeight } from '../../model/resolveWeight.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { Rng } from '../../numerics/rng.ts';
import type { CpuKernel } from '../../reference/cpuKernel.ts';
import { basicKernels } from '../../reference/kernels/basicKernels.ts';
import { moeKernels } from '../../reference/kernels/moeKernels.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { buildMoe } from './moeGraph.ts';
import { moeForwardRank } from './moeMath.ts';
import { moeRankPartition, moeRankWeights, moeWeightSpecs } from './moeWeights.ts';

// Runs the per-rank nodes with the CPU kernels of linear and the MoE ops (the shared
// CpuBackend's kernel index is the lead's to extend), resolving concatenated/sliced weights.
const KERNELS: Record<string, CpuKernel> = { ...basicKernels.perRank, ...moeKernels.perRank };
function interpret(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource): Map<ValueId, Tensor> {
  const env = new Map(feeds);
  const read = (id: ValueId | null): Tensor | null => {
    if (id === null) return null;
    const decl = graph.values[id];
    if (!env.has(id) && decl.kind === 'weight') env.set(id, resolveWeight(weights, decl.weight!));
    const t = env.get(id);
    if (!t) throw new Error(`value '${id}' read before written`);
    expect(t.shape).toEqual(decl.shape);
    return t;
  };
  for (const n of graph.nodes) {
    const out = KERNELS[n.op](n.inputs.map(read), n.attrs);
    n.outputs.forEach((id, p) => {
      expect(out[p]!.dtype).toBe(graph.values[id!].dtype);
      expect(out[p]!.shape).toEqual(graph.values[id!].shape);
      env.set(id!, out[p]!);
    });
  }
  return env;
}

const config = getConfig('small');
const LAYER = 1;
const T = 24;
const H = config.hiddenSize;

describe('MoE graph', () => {
  const weights = new SyntheticWeightSource(moeWeightSpecs(config, LAYER), 3);
  const x = new Rng(4).fillBf16Normal(T * H, 1);

  for (const tp of [1, 2, 4]) {
    it(`tp=${tp}: builds, and each rank's nodes give exactly the math's partial`, () => {
      const b = new GraphBuilder(tp);
      const xIn = b.input('x', [T, H], 'bf16');
      const outs = Array.from({ length: tp }, (_, rank) => buildMoe(b, { config, layer: LAYER, rank, tp, tokens: T, scope: `L${LAYER}.moe` }, xIn));
      const graph = b.build();
      expect(graph.nodes.filter((n) => n.rank === 0).map((n) => n.op)).toEqual(['linear', 'moeRoute', 'moeExperts', 'linear', 'moeSwiGlu', 'linear', 'linear', 'moeCombine']);
      const env = interpret(graph, new Map([[xIn, { dtype: 'bf16', shape: [T, H], data: x } as Tensor]]), weights);
      for (let rank = 0; rank < tp; rank++) {
        const refs = moeRankWeights(config, LAYER, rank, tp);
        const part = moeRankPartition(config, rank, tp);
        const get = (k: keyof typeof refs) => resolveWeight(weights, refs[k]).data as Uint16Array;
        const want = moeForwardRank(x, T, { hidden: H, ...config.moe, sharedIntermediate: part.sharedWidth }, {
          router: get('router'),
          firstExpert: part.firstExpert,
          numLocal: part.numLocal,
          expertsGateUp: get('expertsGateUp'),
          expertsDown: get('expertsDown'),
          sharedGateUp: get('sharedGateUp'),
          sharedDown: get('sharedDown'),
          sharedGate: get('sharedGate'),
        });
        expect(env.get(outs[rank])!.data).toEqual(want.out);
      }
    });
  }

  it('gives each rank only its experts and its shared-expert slice', () => {
    const refs = moeRankWeights(config, LAYER, 1, 4);
    const I = config.moe.sharedIntermediate;
    expect(refs.expertsGateUp.concat).toEqual([4, 5, 6, 7].map((e) => `model.layers.${LAYER}.mlp.experts.${e}.gate_up_proj.weight`));
    expect(refs.sharedGateUp.slice).toEqual({ axis: 0, ranges: [[I / 4, I / 2], [I + I / 4, I + I / 2]] });
    expect(refs.sharedDown.slice).toEqual({ axis: 1, ranges: [[I / 4, I / 2]] });
    expect(refs.router.slice).toBeUndefined();
    expect(() => moeRankPartition(config, 0, 3)).toThrow(/tp 3 does not divide the 16 experts/);
    expect(() => moeRankPartition(config, 4, 4)).toThrow(/rank 4 is outside \[0, 4\)/);
  });
});
