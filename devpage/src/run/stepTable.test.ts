import { describe, expect, it } from 'vitest';
import { TINY } from '@hcsp/core';
import { runComparison } from './runComparison.ts';
import { stepTable } from './stepTable.ts';

describe('stepTable', () => {
  it('joins both runs\' traffic and the diff per step, with the exit row last holding both exit diffs', async () => {
    const report = await runComparison({ config: 'tiny', tokens: 20, tp: 2, seed: 1, subLayers: 'stand-in', a: { sp: 'on', reduce: 'ring' }, b: { sp: 'off', reduce: 'ring' } });
    const rows = stepTable(report);
    expect(rows).toHaveLength(TINY.numLayers * 2 + 1);
    expect(rows.slice(0, 3).map((r) => r.step)).toEqual(['L0.attn', 'L0.mlp', 'L1.attn']);
    for (const r of rows.slice(0, -1)) {
      expect(r.diffs.map((d) => d.step)).toEqual([r.step]);
      expect(r.a!.step).toBe(r.step);
      expect(r.b!.step).toBe(r.step);
    }
    const exit = rows[rows.length - 1];
    expect(exit.step).toBe('exit');
    expect(exit.diffs.map((d) => d.step)).toEqual(['exit: MTP state', 'exit: mixer output h']);
    // sharded: the MTP state is gathered at the exit; unsharded: nothing moves there
    expect(exit.a!.collectives.map((c) => c.kind)).toEqual(['allGather']);
    expect(exit.b!.collectives).toEqual([]);
  });
});
