import { describe, expect, it } from 'vitest';
import { FLASH_NEXT, getConfig, SP_MIN_TOKENS_ENV } from '@hcsp/core';
import { formatBytes } from '../view/format.ts';
import { planView, type PlanControls } from './planView.ts';

const flash = (over: Partial<PlanControls>): PlanControls => ({
  config: FLASH_NEXT,
  tokens: 16384,
  tp: 8,
  sp: 'auto',
  reduce: 'ring',
  minTokensEnv: undefined,
  ...over,
});
const bf16 = 2;
const H = FLASH_NEXT.hiddenSize;

describe('planView', () => {
  it('splits T=16381 at tp 8 into bands of 2048 rows with 3 padding rows on the last band', () => {
    const v = planView(flash({ tokens: 16381 }));
    expect(v.plan.sp).toBe(true);
    expect(v.diagramRows).toBe(8 * 2048);
    expect(v.bands.map((b) => b.start)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((r) => r * 2048));
    expect(v.bands.slice(0, 7).every((b) => b.padRows === 0 && b.realRows === 2048 && b.realEnd === b.end)).toBe(true);
    expect(v.bands[7]).toEqual({ rank: 7, start: 14336, realEnd: 16381, end: 16384, realRows: 2045, padRows: 3 });
    expect(v.plan.spStartLayer).toBe(2);
    expect([v.unshardedSubLayers, v.shardedSubLayers]).toEqual([4, 92]);
    expect(v.plan.quant).toBe('separate');
    expect(v.plan.gather).toBe('hc_state');
    expect(v.hcRowsPerStep).toBe(2048);
  });

  it('lists every collective of the forward as `hcsp plan` does, with shapes and bytes; all-reduce = reduce-scatter + all-gather in bytes', () => {
    const v = planView(flash({ tokens: 16384 }));
    const find = (where: string) => v.collectives.find((c) => c.where === where)!;
    const ar = find('L*.attn.all_reduce');
    const ag = find('L*.attn_in.all_gather');
    const rs = find('L*.attn.reduce_scatter');
    expect([ar.op, ar.count, ar.input, ar.output]).toEqual(['allReduce', 2, `bf16[16384,${H}]`, `bf16[16384,${H}]`]);
    expect([ag.op, ag.count, ag.input, ag.output]).toEqual(['allGather', 46, `bf16[2048,${H}]`, `bf16[16384,${H}]`]);
    expect([rs.op, rs.count, rs.input, rs.output]).toEqual(['reduceScatter', 46, `bf16[16384,${H}]`, `bf16[2048,${H}]`]);
    // ring accounting: all-reduce 2 (tp-1)/tp S, reduce-scatter and all-gather (tp-1)/tp S
    expect(ar.bytesPerRank).toBe(((2 * 7) / 8) * 16384 * H * bf16);
    expect(ag.bytesPerRank + rs.bytesPerRank).toBe(ar.bytesPerRank);
    // the MTP head's collectives are in the forward's total
    expect(v.collectives.filter((c) => c.where.startsWith('mtp')).length).toBeGreaterThan(0);
    expect(v.totalBytesPerRank).toBe(v.collectives.reduce((s, c) => s + c.count * c.bytesPerRank, 0));
  });

  it("small, T 300, tp 4, SP on: the forward's bytes are the run's (MTP head included, 2.21 MiB) beside SP off's", () => {
    const v = planView({ config: getConfig('small'), tokens: 300, tp: 4, sp: 'on', reduce: 'ring', minTokensEnv: undefined });
    expect(v.collectives.map((c) => c.where)).toContain('mtp.attn.all_reduce');
    expect(formatBytes(v.totalBytesPerRank)).toBe('2.21 MiB');
    const off = planView({ config: getConfig('small'), tokens: 300, tp: 4, sp: 'off', reduce: 'ring', minTokensEnv: undefined });
    expect(off.spOffBytesPerRank).toBeNull();
    expect(v.spOffBytesPerRank).toBe(off.totalBytesPerRank);
    expect(v.spOffBytesPerRank).not.toBe(v.totalBytesPerRank);
  });

  it('one-shot all-reduce sends the whole buffer to every peer', () => {
    const v = planView(flash({ tokens: 16384, reduce: 'oneshot' }));
    expect(v.collectives.find((c) => c.where === 'L*.attn.all_reduce')!.bytesPerRank).toBe(7 * 16384 * H * bf16);
  });

  it('leaves the streams replicated, with the gate reason, at T <= 1024 in auto mode', () => {
    const v = planView(flash({ tokens: 1024 }));
    expect(v.plan.sp).toBe(false);
    expect(v.plan.reason).toContain('HC_QUANT_ROWS_MAX 1024');
    expect(v.plan.quant).toBe('fused');
    expect(v.bands.every((b) => b.start === 0 && b.end === 1024 && b.padRows === 0)).toBe(true);
    expect(v.collectives.filter((c) => c.where.startsWith('L*')).map((c) => [c.op, c.where, c.count])).toEqual([
      ['allReduce', 'L*.attn.all_reduce', 48],
      ['allReduce', 'L*.mlp.all_reduce', 48],
    ]);
    expect(v.collectives.some((c) => c.op !== 'allReduce' && c.where.startsWith('L*'))).toBe(false);
    expect(v.gatherText).toContain('never sharded');
  });

  it('reads the token floor from the variable: 0 disables, a bad value is an error naming it', () => {
    expect(planView(flash({ minTokensEnv: '0' })).plan.reason).toContain('is 0');
    expect(planView(flash({ tokens: 4000, minTokensEnv: '8192' })).plan.reason).toContain('T 4000 <');
    expect(() => planView(flash({ minTokensEnv: '1e3' }))).toThrow(
      `${SP_MIN_TOKENS_ENV} must be a non-negative decimal integer (0 disables sharding), got "1e3"`,
    );
    // mode 'on' ignores the variable (testing path), 'off' never shards
    expect(planView(flash({ tokens: 64, sp: 'on', minTokensEnv: 'junk' })).plan.sp).toBe(true);
    expect(planView(flash({ sp: 'off' })).plan.sp).toBe(false);
  });

  it('at T=1, tp 8 forced, ranks 1..7 own only padding', () => {
    const v = planView(flash({ tokens: 1, sp: 'on' }));
    expect(v.bands[0]).toMatchObject({ realRows: 1, padRows: 0 });
    expect(v.bands.slice(1).every((b) => b.realRows === 0 && b.padRows === 1 && b.realEnd === b.start)).toBe(true);
  });

  it('has no collectives at tp 1 and rejects a tp the config cannot split', () => {
    const v = planView(flash({ tp: 1 }));
    expect(v.plan.reason).toContain('tp 1');
    expect(v.collectives).toEqual([]);
    expect(() => planView(flash({ tp: 3 }))).toThrow('tp 3 does not divide');
  });
});
