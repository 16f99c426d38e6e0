import { describe, expect, it } from 'vitest';
import { f32ToBf16, planForward, TINY, type Graph, type Tensor } from '@hcsp/core';
import { globalRows, streamDiff, type RunCapture } from './streamDiff.ts';
import { spOnVsOff } from '../../../test/support/spOnVsOff.ts';
import { runComparison } from './runComparison.ts';

// A hand-made two-rank capture: T = 5 rows of 2 columns, C = 3, so rank 1 owns rows 3, 4
// and one padding row. Row t, column j holds t + j / 4 (exact in bf16).
const T = 5;
const plan = planForward({ config: TINY, tokens: T, tp: 2, minTokens: 0, capturing: false, mtp: true, force: true });
const bf = (vals: number[]): Uint16Array => Uint16Array.from(vals, f32ToBf16);
const rowVals = (t: number): number[] => [t, t + 0.25];
const graphWith = (ids: string[][]): Graph => ({
  tp: 2,
  values: {},
  inputs: [],
  outputs: [],
  meta: {},
  nodes: ids.flatMap((perRank, i) =>
    perRank.map((id, r) => ({
      id: i * 2 + r,
      op: 'hcCombineNorm',
      rank: r,
      inputs: [],
      outputs: [id],
      attrs: {},
      scope: `L${i}.attn_hc.combine_norm`,
      layer: i,
    })),
  ),
});

function capture(shards: Uint16Array[], full: Uint16Array): RunCapture {
  const values = new Map<string, Tensor>();
  shards.forEach((d, r) => {
    values.set(`s${r}`, { dtype: 'bf16', shape: [3, 2], data: d });
  });
  [0, 1].forEach((r) => {
    values.set(`f${r}`, { dtype: 'bf16', shape: [T, 2], data: full });
  });
  values.set('h', { dtype: 'bf16', shape: [T, 2], data: full });
  return {
    plan,
    graph: graphWith([
      ['f0', 'f1'],
      ['s0', 's1'],
    ]),
    streamsPerStep: [
      ['f0', 'f1'],
      ['s0', 's1'],
    ],
    exits: { h: 'h', mtpState: null },
    values,
  };
}

const rows = (ts: number[]): Uint16Array => bf(ts.flatMap((t) => (t < T ? rowVals(t) : [0, 0])));
const full = rows([0, 1, 2, 3, 4]);

describe('globalRows', () => {
  it("puts rank r's shard at rows [r*C, r*C + real) and checks padding and replicas", () => {
    const run = capture([rows([0, 1, 2]), rows([3, 4, 5])], full);
    const g = globalRows(run, ['s0', 's1']);
    expect(g).toMatchObject({ cols: 2, sharded: true, padNonZero: 0, replicaMismatch: 0 });
    expect([...g.data]).toEqual([...full]);
    const u = globalRows(run, ['f0', 'f1']);
    expect([...u.data]).toEqual([...full]);
    expect(u.sharded).toBe(false);
  });

  it('counts nonzero padding and replicas that disagree', async () => {
    const badPad = rows([3, 4, 5]);
    badPad[5] = f32ToBf16(1);
    expect(globalRows(capture([rows([0, 1, 2]), badPad], full), ['s0', 's1']).padNonZero).toBe(1);
    const run = capture([rows([0, 1, 2]), rows([3, 4, 5])], full);
    run.values.set('f1', { dtype: 'bf16', shape: [T, 2], data: rows([0, 1, 2, 3, 3]) });
    expect(globalRows(run, ['f0', 'f1']).replicaMismatch).toBe(2);
  });

  it('rejects a value with neither T nor C rows, naming it', async () => {
    const run = capture([rows([0, 1, 2]), rows([3, 4, 5])], full);
    run.values.set('s1', { dtype: 'bf16', shape: [2, 2], data: rows([3, 4]) });
    expect(() => globalRows(run, ['s0', 's1'])).toThrow("stream diff: rank 1's 's1' is [2,2], rank 0's 's0' is [3,2]");
    run.values.set('s0', { dtype: 'bf16', shape: [4, 2], data: rows([0, 1, 2, 3]) });
    run.values.set('s1', { dtype: 'bf16', shape: [4, 2], data: rows([4, 5, 6, 7]) });
    expect(() => globalRows(run, ['s0', 's1'])).toThrow("stream diff: 's0' has 4 rows, expected T 5 or C 3");
  });
});

describe('streamDiff', () => {
  it("locates a difference in rank 1's shard at its global row, in row-scale ulps", () => {
    const shard1 = rows([3, 4, 5]);
    // row 4 (rank 1, local row 1): 4.25 -> 4.3125, one bf16 ulp at the row scale 4.25 is 2^-5
    shard1[3] = f32ToBf16(4.3125);
    const a = capture([rows([0, 1, 2]), shard1], full);
    const b = capture([rows([0, 1, 2]), rows([3, 4, 5])], full);
    const d = streamDiff(a, b);
    expect(d.map((s) => s.step)).toEqual(['L0.attn', 'L1.attn', 'exit: mixer output h']);
    expect(d[0].differing).toBe(0);
    expect([d[1].differing, d[1].maxRowUlp, d[1].shardedA]).toEqual([1, 2, true]);
    expect([...d[1].rowDiffering]).toEqual([0, 0, 0, 0, 1]);
    expect([...d[1].rowUlp]).toEqual([0, 0, 0, 0, 2]);
  });
});

describe('runComparison (tiny, stand-in sub-layers)', () => {
  const req = (tp: number, reduce: 'ring' | 'oneshot' | 'ordered') => spOnVsOff({ config: 'tiny', tokens: 37, tp, seed: 7, subLayers: 'stand-in' }, reduce);

  it('at tp 2 the diff table is all zeros: every algorithm rounds a + b once', async () => {
    for (const reduce of ['ring', 'oneshot', 'ordered'] as const) {
      const r = await runComparison(req(2, reduce));
      expect(r.a.plan.sp).toBe(true);
      expect(r.b.plan.sp).toBe(false);
      expect(r.diffs).toHaveLength(TINY.numLayers * 2 + 2);
      for (const d of r.diffs) {
        expect([d.step, d.differing, d.maxRowUlp, d.padNonZeroA, d.replicaMismatchB]).toEqual([d.step, 0, 0, 0, 0]);
        expect(d.count).toBeGreaterThan(0);
      }
    }
  });

  it('at tp 4 the ring differs only after the first reduce-scatter, within 4 row-scale ulps; padding stays zero', async () => {
    const r = await runComparison(req(4, 'ring'));
    const byStep = new Map(r.diffs.map((d) => [d.step, d]));
    // L2 is the first sharded layer: its attn streams are combined from L1's all-reduce in both runs
    for (const step of ['L0.attn', 'L0.mlp', 'L1.attn', 'L1.mlp', 'L2.attn']) expect(byStep.get(step)!.differing).toBe(0);
    expect(byStep.get('L2.attn')!.shardedA).toBe(true);
    const after = r.diffs.filter((d) => !['L0', 'L1'].some((l) => d.step.startsWith(l)) && d.step !== 'L2.attn');
    expect(after.some((d) => d.differing > 0)).toBe(true);
    for (const d of r.diffs) {
      expect(d.maxRowUlp).toBeLessThanOrEqual(4);
      expect(d.padNonZeroA).toBe(0); // T 37 at C 10: rank 3 holds 3 padding rows
      expect(d.replicaMismatchB).toBe(0);
    }
    expect(r.a.traffic.find((t) => t.step === 'L2.attn')!.hcRowsPerRank).toEqual([10, 10, 10, 10]);
    // a fixed rank-order sum adds in the same order sharded or not
    expect((await runComparison(req(4, 'ordered'))).diffs.every((d) => d.differing === 0)).toBe(true);
  });

  it('rejects flash-next, a T past the bound and an unknown algorithm, naming the value', async () => {
    await expect(runComparison({ ...req(2, 'ring'), config: 'flash-next' })).rejects.toThrow("config 'flash-next' cannot be run in the page");
    await expect(runComparison({ ...req(2, 'ring'), tokens: 5000 })).rejects.toThrow('got 5000');
    await expect(runComparison({ ...req(2, 'ring'), b: { sp: 'off', reduce: 'tree' as 'ring' } })).rejects.toThrow(
      'run b: reduce must be one of ring, oneshot, ordered, got "tree"',
    );
  });
});
