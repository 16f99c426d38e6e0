import { describe, expect, it } from 'vitest';
import { CpuBackend, preparePrefill, STAND_IN_SUB_LAYERS, TINY, type SpMode, runOnce } from '@hcsp/core';
import { compareSteps, EXIT_STEP, MTP_STEP, stepKeyOf } from './stepKey.ts';
import { stepTraffic } from './stepTraffic.ts';

const prepare = (sp: SpMode, tokens = 37, tp = 4) => preparePrefill({ config: TINY, tokens, tp, sp, reduce: 'ring', seed: 3, subLayers: STAND_IN_SUB_LAYERS });

describe('stepKeyOf', () => {
  it("puts a sub-layer's HC, gather, reduce and trim nodes in one step, the rest in exit", () => {
    expect(['L3.attn_in.all_gather', 'L3.attn.reduce_scatter', 'L3.attn_hc.combine_norm', 'L3.attn.pad'].map(stepKeyOf)).toEqual(Array(4).fill('L3.attn'));
    expect(stepKeyOf('L12.mlp_hc.down')).toBe('L12.mlp');
    expect(['mixer.combine_norm', 'mtp_state.all_gather', 'embed'].map(stepKeyOf)).toEqual(Array(3).fill(EXIT_STEP));
    expect(['L1.ple.add', 'L1.ple.query_norm'].map(stepKeyOf)).toEqual(['L1.ple', 'L1.ple']);
    expect(['mtp.attn_hc.combine_norm', 'mtp.lm_head.all_gather'].map(stepKeyOf)).toEqual([MTP_STEP, MTP_STEP]);
  });
});

describe('compareSteps', () => {
  it('orders steps as the forward runs them: by layer, PLE before attn before mlp, the exit, then the MTP head', async () => {
    const keys = [MTP_STEP, EXIT_STEP, 'L10.attn', 'L1.attn', 'L2.mlp', 'L1.ple', 'L1.mlp', 'L0.mlp', 'L2.attn', 'L0.attn'];
    expect([...keys].sort(compareSteps)).toEqual(['L0.attn', 'L0.mlp', 'L1.ple', 'L1.attn', 'L1.mlp', 'L2.attn', 'L2.mlp', 'L10.attn', EXIT_STEP, MTP_STEP]);
    expect(() => compareSteps('L2.sp', 'L1.attn')).toThrow('step key "L2.sp" is not L<layer>.<ple|attn|mlp>, exit or mtp');
  });
});

describe('stepTraffic', () => {
  it('lists all-reduce before SP starts, all-gather + reduce-scatter after, and the exit gather (tiny, T 37, tp 4)', async () => {
    const steps = stepTraffic(prepare('on').graph);
    const byStep = new Map(steps.map((s) => [s.step, s]));
    expect(steps.map((s) => s.step)).toEqual(['L0.attn', 'L0.mlp', 'L1.attn', 'L1.mlp', 'L2.attn', 'L2.mlp', 'L3.attn', 'L3.mlp', EXIT_STEP, MTP_STEP]);
    const l0 = byStep.get('L0.attn')!;
    expect(l0.collectives.map((c) => [c.kind, c.algorithm, c.inShape, c.outShape])).toEqual([['allReduce', 'ring', [37, 32], [37, 32]]]);
    // ring all-reduce: 2 (tp-1)/tp of the buffer, i.e. 55.5 rows' worth per rank
    expect(l0.collectives[0].rowsSentPerRank).toEqual(Array(4).fill(55.5));
    expect(l0.hcRowsPerRank).toEqual(Array(4).fill(37));
    const l2 = byStep.get('L2.attn')!;
    expect(l2.collectives.map((c) => [c.kind, c.inShape, c.outShape])).toEqual([
      ['allGather', [10, 32], [40, 32]],
      ['reduceScatter', [40, 32], [10, 32]],
    ]);
    // each rank sends its 10 rows to 3 peers, and 3 peers' blocks of the padded partial
    expect(l2.collectives.map((c) => c.rowsSentPerRank[0])).toEqual([30, 30]);
    expect(l2.hcRowsPerRank).toEqual(Array(4).fill(10));
    const exit = byStep.get(EXIT_STEP)!;
    // the MTP state gathered, then the LM head's vocab shards of the last position
    expect(exit.collectives.map((c) => [c.scope, c.inShape])).toEqual([
      ['mtp_state.all_gather', [10, 128]],
      ['lm_head.all_gather', [1, 128]],
    ]);
    expect(exit.hcRowsPerRank).toEqual(Array(4).fill(37)); // the mixer runs on the gathered T rows
    const mtp = byStep.get(MTP_STEP)!;
    expect(mtp.collectives.map((c) => [c.scope, c.inShape])).toEqual([
      ['mtp.attn.all_reduce', [37, 32]],
      ['mtp.mlp.all_reduce', [37, 32]],
      ['mtp.lm_head.all_gather', [1, 128]],
    ]);
    // its two input norms, its two HC mixes and its mixer, on all T rows
    expect(mtp.hcRowsPerRank).toEqual(Array(4).fill(5 * 37));
  });

  it("adds up to the backend's run stats, SP on and off", async () => {
    for (const sp of ['on', 'off'] as const) {
      const p = prepare(sp);
      const { stats } = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights);
      const steps = stepTraffic(p.graph);
      for (let r = 0; r < 4; r++) {
        expect(steps.reduce((s, st) => s + st.hcRowsPerRank[r], 0)).toBe(stats.hcRowsPerRank[r]);
        for (const kind of ['allReduce', 'allGather', 'reduceScatter'] as const) {
          const sum = steps
            .flatMap((st) => st.collectives)
            .filter((c) => c.kind === kind)
            .reduce((s, c) => s + c.bytesPerRank[r], 0);
          expect(sum).toBe(stats.commBytesPerRank[r][kind]);
        }
      }
    }
  });
});
