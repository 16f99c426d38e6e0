import { describe, expect, it } from 'vitest';
import { TINY } from '@hcsp/core';
import { spOnVsOff } from '../../../test/support/spOnVsOff.ts';
import { runComparison } from './runComparison.ts';
import { stepTable } from './stepTable.ts';

// The full model's sub-layers (attention / GDN, MoE, PLE) on tiny: T 37 at tp 4 is C 10,
// so rank 3 holds 3 padding rows.
const req = (tp: number, reduce: 'ring' | 'oneshot') => spOnVsOff({ config: 'tiny', tokens: 37, tp, seed: 7, subLayers: 'model' }, reduce);

describe('runComparison (tiny, full model)', () => {
  it('compares every step, the PLE layer included, with padding zero and replicas agreeing', async () => {
    const r = await runComparison(req(4, 'ring'));
    expect(r.subLayersName).toContain('PLE');
    const steps = r.diffs.map((d) => d.step);
    expect(steps).toEqual([
      'L0.attn',
      'L0.mlp',
      'L1.ple',
      'L1.attn',
      'L1.mlp',
      'L2.attn',
      'L2.mlp',
      'L3.attn',
      'L3.mlp',
      'exit: MTP state',
      'exit: mixer output h',
    ]);
    const byStep = new Map(r.diffs.map((d) => [d.step, d]));
    // before SP starts (layer 2, after the PLE layer) both runs all-reduce alike
    for (const step of ['L0.attn', 'L0.mlp', 'L1.ple', 'L1.attn', 'L1.mlp', 'L2.attn']) expect(byStep.get(step)!.differing).toBe(0);
    expect([byStep.get('L1.ple')!.shardedA, byStep.get('L2.attn')!.shardedA]).toEqual([false, true]);
    // the ring's reduce-scatter rounds differently from its all-reduce at tp 4
    expect(r.diffs.some((d) => d.differing > 0)).toBe(true);
    for (const d of r.diffs) expect([d.step, d.padNonZeroA, d.padNonZeroB, d.replicaMismatchA, d.replicaMismatchB]).toEqual([d.step, 0, 0, 0, 0]);
    // the table has the PLE row in place, with no traffic of its own
    const rows = stepTable(r);
    expect(rows.map((x) => x.step).slice(0, 4)).toEqual(['L0.attn', 'L0.mlp', 'L1.ple', 'L1.attn']);
    expect([rows[2].a, rows[2].b, rows[2].diffs.length]).toEqual([null, null, 1]);
    // two steps per layer, the PLE step, the exit and the MTP head
    expect(rows).toHaveLength(TINY.numLayers * 2 + 3);
  });

  it('is bit-identical at tp 2 (ring) and with the one-shot sum at tp 4', async () => {
    for (const [tp, reduce] of [
      [2, 'ring'],
      [4, 'oneshot'],
    ] as const) {
      const r = await runComparison(req(tp, reduce));
      expect(r.diffs).toHaveLength(11);
      for (const d of r.diffs) expect([`tp ${tp} ${reduce}`, d.step, d.differing]).toEqual([`tp ${tp} ${reduce}`, d.step, 0]);
    }
  });
});
