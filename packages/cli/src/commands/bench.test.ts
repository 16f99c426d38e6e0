import { FLASH_NEXT, TINY } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { hcMixBenchGraph, hcMixBytes, hcMixFlops, hcMixGemms, median, parseBenchOptions, parseTokenList } from './bench.ts';

const RAW = { tokens: '1024,4096', reps: '3', cpuReps: '1', seed: '0' };

describe('bench option parsing', () => {
  it('reads the token list and counts', () => {
    expect(parseTokenList('1024,4096')).toEqual([1024, 4096]);
    expect(parseTokenList('7')).toEqual([7]);
    expect(parseBenchOptions({ ...RAW, json: true })).toEqual({ tokens: [1024, 4096], reps: 3, cpuReps: 1, seed: 0, json: true, quiet: false, maxMemory: undefined });
    expect(parseBenchOptions(RAW).json).toBe(false);
    expect(parseBenchOptions({ ...RAW, quiet: true, maxMemory: '8G' })).toMatchObject({ quiet: true, maxMemory: '8G' });
  });

  it('rejects bad values, naming them', () => {
    expect(() => parseTokenList('1024,,4096')).toThrow(/--tokens entry must be an integer .*got ""/);
    expect(() => parseTokenList('0')).toThrow(/--tokens entry .*got "0"/);
    expect(() => parseTokenList('1e3')).toThrow(/got "1e3"/);
    expect(() => parseTokenList('8,8')).toThrow(/--tokens "8,8" lists a token count twice/);
    expect(() => parseBenchOptions({ ...RAW, reps: '0' })).toThrow(/--reps .*got "0"/);
    expect(() => parseBenchOptions({ ...RAW, cpuReps: 'x' })).toThrow(/--cpu-reps .*got "x"/);
    expect(() => parseBenchOptions({ ...RAW, seed: '-1' })).toThrow(/--seed .*got "-1"/);
    expect(() => parseBenchOptions({ ...RAW, maxMemory: 'lots' })).toThrow(/--max-memory must be a positive size .*got "lots"/);
  });
});

describe('bench flop and byte counts', () => {
  it('flash-next GEMMs are W_cat [10240 -> 324] and up [320 -> 10240]', () => {
    expect(hcMixGemms(FLASH_NEXT)).toEqual([
      [10240, 324],
      [320, 10240],
    ]);
    expect(hcMixFlops(FLASH_NEXT, 1024)).toBe(2 * 1024 * (10240 * 324 + 320 * 10240));
    expect(hcMixFlops(FLASH_NEXT, 1024)).toBe(13_505_658_880);
  });

  it('bytes: every tensor of the five ops once at bf16 size, summed by hand for flash-next', () => {
    const T = 1024;
    const nh = 10240;
    const combineNorm = T * nh + nh + 2 * T * nh;
    const down = T * nh + 324 * nh + T * 324;
    const silu = T * 324 + T * 320 + T * 4;
    const up = T * 320 + nh * 320 + T * nh;
    const mean = 2 * T * nh + T * 2560;
    expect(hcMixBytes(FLASH_NEXT, T)).toBe(2 * (combineNorm + down + silu + up + mean));
    // linear in T apart from the weights
    const perToken = hcMixBytes(FLASH_NEXT, 2) - hcMixBytes(FLASH_NEXT, 1);
    expect(hcMixBytes(FLASH_NEXT, 3)).toBe(hcMixBytes(FLASH_NEXT, 1) + 2 * perToken);
  });

  it('median of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(/no values/);
  });
});

describe('bench graph', () => {
  it('is the tp-1 mix: combine-norm, linear, scaled silu, linear, gated mean, with x, streams and raw out', () => {
    const g = hcMixBenchGraph(TINY, 5);
    expect(g.tp).toBe(1);
    expect(g.nodes.map((n) => n.op)).toEqual(['hcCombineNorm', 'linear', 'hcScaledSilu', 'linear', 'hcGatedMean']);
    expect(g.outputs.map((id) => g.values[id].shape)).toEqual([
      [5, TINY.hiddenSize],
      [5, TINY.hc.count * TINY.hiddenSize],
      [5, TINY.hc.count],
    ]);
  });
});
