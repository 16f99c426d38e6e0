import { FLASH_NEXT } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { hcMixBytes, hcMixFlops, hcMixGemms } from './hcMixCounts.ts';

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
});
