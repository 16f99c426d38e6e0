import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { Rng } from '../../numerics/rng.ts';
import { runOnce } from '../../backend/backend.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { buildMoe } from './moeGraph.ts';
import { moeRankReference } from '../../../../../test/support/moeRankReference.ts';
import { moeRankPartition, moeRankWeights, moeWeightSpecs } from './moeWeights.ts';

const config = getConfig('small');
const LAYER = 1;
const T = 24;
const H = config.hiddenSize;

describe('MoE graph', () => {
  const weights = new SyntheticWeightSource(moeWeightSpecs(config, LAYER), 3);
  const x = new Rng(4).fillBf16Normal(T * H, 1);

  for (const tp of [1, 2, 4]) {
    it(`tp=${tp}: builds, and each rank's nodes give exactly the math's partial`, async () => {
      const b = new GraphBuilder(tp);
      const xIn = b.input('x', [T, H], 'bf16');
      const outs = Array.from({ length: tp }, (_, rank) => buildMoe(b, { config, layer: LAYER, rank, tp, tokens: T, scope: `L${LAYER}.moe` }, xIn));
      const graph = b.build();
      expect(graph.nodes.filter((n) => n.rank === 0).map((n) => n.op)).toEqual([
        'linear',
        'moeRoute',
        'moeExperts',
        'linear',
        'moeSwiGlu',
        'linear',
        'linear',
        'moeCombine',
      ]);
      // CpuBackend checks every fed input, resolved weight and produced value against its
      // declared dtype and shape, and throws on a mismatch.
      const feeds = new Map<ValueId, Tensor>([[xIn, { dtype: 'bf16', shape: [T, H], data: x }]]);
      const { values } = await runOnce(new CpuBackend(), graph, feeds, weights, { keep: outs });
      for (let rank = 0; rank < tp; rank++) {
        const want = moeRankReference(config, LAYER, weights, x, T, rank, tp);
        expect(values.get(outs[rank])!.data).toEqual(want.out);
      }
    });
  }

  it('gives each rank only its experts and its shared-expert slice', () => {
    const refs = moeRankWeights(config, LAYER, 1, 4);
    const I = config.moe.sharedIntermediate;
    const p = `model.layers.${LAYER}.mlp`;
    // experts 4..7 of 16: rows 4..7 of the stacked HF tensors, seen as 2-D stacks
    expect(refs.expertsGateUp).toEqual({
      name: `${p}.experts.gate_up_proj`,
      slice: { axis: 0, ranges: [[4, 8]] },
      reshape: [4 * 2 * config.moe.intermediate, H],
    });
    expect(refs.expertsDown).toEqual({ name: `${p}.experts.down_proj`, slice: { axis: 0, ranges: [[4, 8]] }, reshape: [4 * H, config.moe.intermediate] });
    expect(refs.sharedGateUp.concat).toEqual([`${p}.shared_expert.gate_proj.weight`, `${p}.shared_expert.up_proj.weight`]);
    expect(refs.sharedGateUp.slice).toEqual({
      axis: 0,
      ranges: [
        [I / 4, I / 2],
        [I + I / 4, I + I / 2],
      ],
    });
    expect(refs.sharedDown.slice).toEqual({ axis: 1, ranges: [[I / 4, I / 2]] });
    expect(refs.router.slice).toBeUndefined();
    // the resolved tensors are those rows of the HF tensors: experts 4..7 whole, and the
    // shared expert's gate rows [I/4, I/2) then its up rows [I/4, I/2)
    const gu = weights.tensor(`${p}.experts.gate_up_proj`).data;
    const per = 2 * config.moe.intermediate * H;
    expect(weights.resolve(refs.expertsGateUp).data).toEqual(gu.subarray(4 * per, 8 * per));
    const gate = weights.tensor(`${p}.shared_expert.gate_proj.weight`).data;
    const up = weights.tensor(`${p}.shared_expert.up_proj.weight`).data;
    const shared = weights.resolve(refs.sharedGateUp);
    expect(shared.shape).toEqual([I / 2, H]);
    expect(shared.data.subarray(0, (I / 4) * H)).toEqual(gate.subarray((I / 4) * H, (I / 2) * H));
    expect(shared.data.subarray((I / 4) * H)).toEqual(up.subarray((I / 4) * H, (I / 2) * H));
    expect(() => moeRankPartition(config, 0, 3)).toThrow(/tp 3 does not divide the 16 experts/);
    expect(() => moeRankPartition(config, 4, 4)).toThrow(/rank 4 is outside \[0, 4\)/);
  });
});
