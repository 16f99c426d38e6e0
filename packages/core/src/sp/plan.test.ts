import { describe, expect, it } from 'vitest';
import { FLASH_NEXT, TINY } from '../config/presets.ts';
import { chunkRows, planForward, shardRows, spStartLayerOf } from './plan.ts';
import type { PlanInput, SpPlan } from './plan.ts';

const base: PlanInput = { config: FLASH_NEXT, tokens: 4096, tp: 8, minTokens: 1024, capturing: false, mtp: true };
const plan = (over: Partial<PlanInput>) => planForward({ ...base, ...over });

/** Invariants every sharded plan keeps: ranks tile [0, C*tp) in order, real rows sum to T, padding only at the tail. */
function checkShardTiling(p: SpPlan): void {
  expect(p.shards.map((s) => s.rank)).toEqual([...Array(p.tp).keys()]);
  let real = 0;
  for (const s of p.shards) {
    expect(s.start).toBe(s.rank * p.chunk);
    expect(s.end - s.start).toBe(p.chunk);
    expect(s.realRows + s.padRows).toBe(p.chunk);
    expect(s.realRows).toBe(Math.max(0, Math.min(s.end, p.tokens) - s.start));
    real += s.realRows;
  }
  expect(real).toBe(p.tokens);
  expect(p.paddedTokens).toBe(p.chunk * p.tp);
  expect(p.paddedTokens - p.tokens).toBeLessThan(p.tp);
}

describe('planForward: sharded', () => {
  it('T = 16381 at tp 8: C = 2048, 3 padding rows on the last rank', () => {
    const p = plan({ tokens: 16381 });
    expect(p.sp).toBe(true);
    expect(p.reason).toBeNull();
    expect(p.chunk).toBe(2048);
    expect(p.paddedTokens).toBe(16384);
    expect(p.shards[7]).toEqual({ rank: 7, start: 14336, end: 16384, realRows: 2045, padRows: 3 });
    for (const s of p.shards.slice(0, 7)) expect(s.padRows).toBe(0);
    expect(p.spStartLayer).toBe(2);
    expect(p.quant).toBe('separate');
    expect(p.gather).toBe('hc_state');
    expect(p.layers).toEqual([0, 48]);
    checkShardTiling(p);
  });

  it('T a multiple of tp has no padding', () => {
    const p = plan({ tokens: 4096, tp: 4 });
    expect(p.chunk).toBe(1024);
    expect(p.paddedTokens).toBe(4096);
    for (const s of p.shards) expect(s.padRows).toBe(0);
    checkShardTiling(p);
  });

  it('gather is the mixer output without MTP', () => {
    expect(plan({ mtp: false }).gather).toBe('mixer');
  });

  it('tiling holds over a sweep of T and tp (forced, so small T shard too)', () => {
    for (const tp of [2, 4, 8]) {
      for (let tokens = 1; tokens <= 40; tokens++) {
        const p = plan({ config: FLASH_NEXT, tokens, tp, force: true });
        expect(p.sp).toBe(true);
        checkShardTiling(p);
      }
    }
  });
});

describe('planForward: padding of small T (forced sharding)', () => {
  it('T = 1 at tp 8: rank 0 holds the row, the other ranks one zero row each', () => {
    const p = plan({ tokens: 1, force: true });
    expect(p.sp).toBe(true);
    expect(p.forced).toBe(true);
    expect(p.chunk).toBe(1);
    expect(p.paddedTokens).toBe(8);
    expect(p.shards[0]).toEqual({ rank: 0, start: 0, end: 1, realRows: 1, padRows: 0 });
    for (const s of p.shards.slice(1)) expect([s.realRows, s.padRows]).toEqual([0, 1]);
    expect(p.quant).toBe('separate');
  });

  it('T = tp - 1: the last rank is all padding', () => {
    const p = plan({ tokens: 7, force: true });
    expect(p.chunk).toBe(1);
    expect(p.paddedTokens).toBe(8);
    expect(p.shards[6]).toEqual({ rank: 6, start: 6, end: 7, realRows: 1, padRows: 0 });
    expect(p.shards[7]).toEqual({ rank: 7, start: 7, end: 8, realRows: 0, padRows: 1 });
  });

  it('without force, a tiny T is not sharded even with a small floor', () => {
    const p = plan({ tokens: 7, minTokens: 1 });
    expect(p.sp).toBe(false);
    expect(p.reason).toContain('HC_QUANT_ROWS_MAX');
  });
});

describe('planForward: not sharded', () => {
  it('tp 1: one shard covering [0, T), fused quant at T <= 1024', () => {
    const p = plan({ tp: 1, tokens: 1000 });
    expect(p.sp).toBe(false);
    expect(p.reason).toMatch(/^tp 1/);
    expect(p.chunk).toBe(1000);
    expect(p.paddedTokens).toBe(1000);
    expect(p.shards).toEqual([{ rank: 0, start: 0, end: 1000, realRows: 1000, padRows: 0 }]);
    expect(p.spStartLayer).toBeNull();
    expect(p.gather).toBeNull();
    expect(p.quant).toBe('fused');
  });

  it('every rank covers [0, T) when the gate is closed', () => {
    const p = plan({ tokens: 5000, capturing: true });
    expect(p.sp).toBe(false);
    expect(p.shards).toHaveLength(8);
    for (const s of p.shards) expect(s).toMatchObject({ start: 0, end: 5000, realRows: 5000, padRows: 0 });
    expect(p.quant).toBe('separate'); // above 1024 rows the separate per-token kernel runs, sharded or not
  });

  it('T = 1024 vs 1025 at the default floor', () => {
    const at = plan({ tokens: 1024 });
    expect([at.sp, at.quant]).toEqual([false, 'fused']);
    const above = plan({ tokens: 1025 });
    expect([above.sp, above.quant, above.chunk, above.paddedTokens]).toEqual([true, 'separate', 129, 1032]);
  });

  it("the variable '0' disables", () => {
    expect(plan({ minTokens: 0, tokens: 100_000 }).sp).toBe(false);
  });
});

describe('planForward: stages', () => {
  it('layers 0:2 ends at the PLE layer: nothing to shard', () => {
    const p = plan({ layers: [0, 2], tokens: 8192 });
    expect(p.sp).toBe(false);
    expect(p.reason).toContain('sp_start_layer 2 >= end_layer 2');
    expect(p.spStartLayer).toBeNull();
  });

  it('layers 0:3 shards layer 2 only', () => {
    const p = plan({ layers: [0, 3], tokens: 8192 });
    expect([p.sp, p.spStartLayer]).toEqual([true, 2]);
  });

  it('a stage without a PLE layer shards from its start', () => {
    expect(spStartLayerOf(FLASH_NEXT, [10, 20])).toBe(10);
    expect(plan({ layers: [10, 20], tokens: 8192 }).spStartLayer).toBe(10);
    expect(spStartLayerOf(FLASH_NEXT, [1, 5])).toBe(2);
    expect(spStartLayerOf(FLASH_NEXT, [0, 1])).toBe(0);
  });

  it('a stage starting after the PLE layer shards from its start', () => {
    expect(plan({ layers: [2, 48], tokens: 8192 }).spStartLayer).toBe(2);
  });
});

describe('planForward: validation', () => {
  it('rejects bad tokens / tp / layers naming the value', () => {
    expect(() => plan({ tokens: 0 })).toThrow('tokens must be a positive integer, got 0');
    expect(() => plan({ tokens: 2.5 })).toThrow('got 2.5');
    expect(() => plan({ tp: -2 })).toThrow('tp must be a positive integer, got -2');
    expect(() => plan({ tp: 5 })).toThrow('tp 5 does not divide');
    expect(() => plan({ tp: 16 })).toThrow('tp 16 does not divide the 24 attention heads');
    expect(() => plan({ layers: [2, 2] })).toThrow('layers 2:2');
    expect(() => plan({ layers: [0, 49] })).toThrow('layers 0:49');
    expect(() => plan({ layers: [-1, 4] })).toThrow('layers -1:4');
    expect(() => plan({ config: TINY, tp: 2, layers: [0, 5] })).toThrow("config 'tiny' has 4 decoder layers");
  });

  it('rejects MTP on a config without an MTP layer', () => {
    expect(() => plan({ config: { ...FLASH_NEXT, name: 'no-mtp', mtp: false } })).toThrow("config 'no-mtp' has no MTP layer");
  });
});

describe('shard helpers', () => {
  it('chunkRows and shardRows', () => {
    expect(chunkRows(16381, 8)).toBe(2048);
    expect(shardRows(16381, 8, 7)).toEqual({ rank: 7, start: 14336, end: 16384, realRows: 2045, padRows: 3 });
    expect(shardRows(10, 4, 3)).toEqual({ rank: 3, start: 9, end: 12, realRows: 1, padRows: 2 });
    expect(() => shardRows(10, 4, 4)).toThrow('rank must be an integer in [0, 4), got 4');
    expect(() => chunkRows(0, 4)).toThrow('tokens must be a positive integer, got 0');
  });
});
