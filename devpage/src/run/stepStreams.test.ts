import { describe, expect, it } from 'vitest';
import { MODEL_SUB_LAYERS, preparePrefill, STAND_IN_SUB_LAYERS, TINY, type SubLayerBuilders } from '@hcsp/core';
import { stepStreams } from './stepStreams.ts';

const prepare = (subLayers: SubLayerBuilders) => preparePrefill({ config: TINY, tokens: 37, tp: 4, sp: 'on', reduce: 'ring', seed: 3, subLayers });

describe('stepStreams', () => {
  it("puts the streams entering the PLE layer before that layer's attention (tiny, full model)", () => {
    const p = prepare(MODEL_SUB_LAYERS);
    const steps = stepStreams(p.graph, p.outputs.streamsPerStep);
    expect(steps.map((s) => s.step)).toEqual(['L0.attn', 'L0.mlp', 'L1.ple', 'L1.attn', 'L1.mlp', 'L2.attn', 'L2.mlp', 'L3.attn', 'L3.mlp']);
    const ple = steps[2];
    // each rank's PLE reads and adds to its own [T, nH] streams: the value its add node takes first
    ple.perRank.forEach((id, r) => {
      const add = p.graph.nodes.find((n) => n.scope === 'L1.ple.add' && n.rank === r)!;
      expect(add.inputs[0]).toBe(id);
      expect(p.graph.values[id]).toMatchObject({ shape: [37, TINY.hc.count * TINY.hiddenSize], rank: r });
    });
    // the other steps are the decoder's own list, unchanged
    expect(steps.filter((s) => s.step !== 'L1.ple').map((s) => s.perRank)).toEqual(p.outputs.streamsPerStep);
  });

  it('adds nothing when the sub-layers have no PLE', () => {
    const p = prepare(STAND_IN_SUB_LAYERS);
    expect(stepStreams(p.graph, p.outputs.streamsPerStep).map((s) => s.perRank)).toEqual(p.outputs.streamsPerStep);
  });

  it('rejects a PLE add missing on a rank, naming the step', () => {
    const p = prepare(MODEL_SUB_LAYERS);
    const graph = { ...p.graph, nodes: p.graph.nodes.filter((n) => !(n.scope === 'L1.ple.add' && n.rank === 2)) };
    expect(() => stepStreams(graph, p.outputs.streamsPerStep)).toThrow('step streams: L1.ple has a PLE add on 3 of 4 ranks');
  });
});
