import { CpuBackend, MODEL_SUB_LAYERS, preparePrefill, TINY, type ReduceAlgorithm, type SpMode, runOnce } from '@hcsp/core';
import { beyondTolerance, describeDifferences, diffRuns } from '@hcsp/core/xcheck';
import { expect, it } from 'vitest';
import { describeWithBackends } from './backends.ts';

// The whole decoder stack (tiny: PLE, GDN, attention, MoE, HC, SP collectives), every value
// of every layer compared with the CPU reference, and the SP on/off equalities per backend.
const reference = new CpuBackend();
const T = 23;

function prepare(tp: number, sp: SpMode, reduce: ReduceAlgorithm) {
  return preparePrefill({ config: TINY, tokens: T, tp, sp, reduce, seed: 4, subLayers: MODEL_SUB_LAYERS });
}

const bytes = (t: { data: ArrayBufferView }) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

describeWithBackends('decoder stack matches the CPU reference layer by layer', (backend) => {
  for (const [tp, sp, reduce] of [
    [2, 'on', 'ring'],
    [4, 'on', 'ring'],
    [4, 'off', 'ring'],
    [4, 'on', 'oneshot'],
  ] as const) {
    it(`tp ${tp}, SP ${sp}, ${reduce}: every value bit-exact`, async () => {
      const p = prepare(tp, sp, reduce);
      const expected = await runOnce(reference, p.graph, p.feeds, p.weights, { keep: 'all' });
      const actual = await runOnce(backend(), p.graph, p.feeds, p.weights, { keep: 'all' });
      const { compared, differences } = diffRuns(p.graph, expected, actual);
      expect(compared).toBeGreaterThan(p.graph.nodes.length);
      expect(beyondTolerance(differences, backend()), describeDifferences(differences)).toEqual([]);
      expect(actual.stats.hcRowsPerRank).toEqual(expected.stats.hcRowsPerRank);
      expect(actual.stats.commBytesPerRank).toEqual(expected.stats.commBytesPerRank);
    });
  }

  it('SP on and off give bit-identical outputs at tp 2 (and differ at tp 4 with the ring order)', async () => {
    const out = async (tp: number, sp: SpMode) => {
      const p = prepare(tp, sp, 'ring');
      const r = await runOnce(backend(), p.graph, p.feeds, p.weights);
      return { h: bytes(r.values.get(p.outputs.h)!), mtp: bytes(r.values.get(p.outputs.mtpState!)!) };
    };
    const [on2, off2] = [await out(2, 'on'), await out(2, 'off')];
    expect(on2.h.equals(off2.h)).toBe(true);
    expect(on2.mtp.equals(off2.mtp)).toBe(true);
    const [on4, off4] = [await out(4, 'on'), await out(4, 'off')];
    expect(on4.h.equals(off4.h)).toBe(false);
  });
});
