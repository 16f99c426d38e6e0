import { describe, expect, it } from 'vitest';
import { TINY } from '@hcsp/core';
import { spOnVsOff } from '../../../test/support/spOnVsOff.ts';
import { runComparison } from './runComparison.ts';
import { stepTable } from './stepTable.ts';

describe('stepTable', () => {
  it("joins both runs' traffic and the diff per step, the exit row holding both exit diffs, the MTP head last", async () => {
    const report = await runComparison(spOnVsOff({ config: 'tiny', tokens: 20, tp: 2, seed: 1, subLayers: 'stand-in' }));
    const rows = stepTable(report);
    expect(rows).toHaveLength(TINY.numLayers * 2 + 2);
    expect(rows.slice(0, 3).map((r) => r.step)).toEqual(['L0.attn', 'L0.mlp', 'L1.attn']);
    for (const r of rows.slice(0, -2)) {
      expect(r.diffs.map((d) => d.step)).toEqual([r.step]);
      expect(r.a!.step).toBe(r.step);
      expect(r.b!.step).toBe(r.step);
    }
    const [exit, mtp] = rows.slice(-2);
    expect(exit.step).toBe('exit');
    expect(mtp.step).toBe('mtp');
    expect(exit.diffs.map((d) => d.step)).toEqual(['exit: MTP state', 'exit: mixer output h']);
    // sharded: the MTP state is gathered at the exit; both gather the LM head's vocab shards
    expect(exit.a!.collectives.map((c) => c.scope)).toEqual(['mtp_state.all_gather', 'lm_head.all_gather']);
    expect(exit.b!.collectives.map((c) => c.scope)).toEqual(['lm_head.all_gather']);
    // the MTP head runs on all rows in both: one all-reduce per sub-layer, its logits gathered
    expect(mtp.a!.collectives.map((c) => c.scope)).toEqual(['mtp.attn.all_reduce', 'mtp.mlp.all_reduce', 'mtp.lm_head.all_gather']);
  });
});
