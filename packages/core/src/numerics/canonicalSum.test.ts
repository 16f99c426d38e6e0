import { describe, expect, it } from 'vitest';
import { CANONICAL_LANES, canonicalButterfly, canonicalLaneSums, canonicalSumF32 } from './canonicalSum.ts';
import { mulberry32 } from '../../../../test/support/mulberry32.ts';

const fr = Math.fround;
const sequential = (n: number, term: (j: number) => number): number => {
  let acc = 0;
  for (let j = 0; j < n; j++) acc = fr(acc + term(j));
  return acc;
};

// Sums whose fp32 value depends on the order, computed by hand, so that a kernel adding in any
// other order (sequentially, with another lane count, chunk or butterfly) fails.
describe('canonical reduction order v1', () => {
  it('2^24 then 1023 ones: in order every one is lost; v1 loses only the 15 in lane 0 and keeps 1008', () => {
    const term = (j: number) => (j === 0 ? 2 ** 24 : 1);
    expect(sequential(1024, term)).toBe(2 ** 24);
    // lane 0: 2^24 and its 15 ones (chunks at 0 and 512) -> 2^24; lanes 1-63: 16 ones each;
    // the butterfly adds 2^24 to sums of 16 (spacing 2 at 2^24: exact) and the rest exactly
    expect(canonicalSumF32(1024, term)).toBe(2 ** 24 + 63 * 16);
  });

  it('lane ownership: chunk c of 8 terms belongs to lane c mod 64, in chunk order', () => {
    // one term in each of lanes 0, 1, 63 and lane 0's second chunk (j = 512)
    const n = 1000;
    const placed = new Map([
      [3, 1.5],
      [8, 2],
      [63 * 8 + 7, 4],
      [512, 8],
    ]);
    const lanes = canonicalLaneSums(n, (j) => placed.get(j) ?? 0);
    expect(lanes[0]).toBe(9.5);
    expect(lanes[1]).toBe(2);
    expect(lanes[63]).toBe(4);
    expect(lanes.reduce((a, b) => a + b, 0)).toBe(15.5);
  });

  it('the butterfly pairs lanes 32 apart first: 1 + 2^-24 terms that a rank-order sum would round away', () => {
    // lane 0 = 1, lanes 32 and 16 = 2^-24 each: v1 adds lane 0 + lane 32 first (1 + 2^-24 rounds
    // to 1, ties to even), lane 16 + lane 48 (0 + 2^-24) ..., so the two tiny terms meet before
    // they reach the 1: (2^-24 + 2^-24) = 2^-23 and 1 + 2^-23 is exact
    const lanes = new Float32Array(CANONICAL_LANES);
    lanes[0] = 1;
    lanes[32] = 2 ** -24;
    lanes[16] = 2 ** -24;
    expect(canonicalButterfly(lanes)).toBe(1);
    lanes[48] = 2 ** -24;
    lanes[32] = 0;
    // lane 0 + lane 32 = 1, lane 16 + lane 48 = 2^-23; then 1 + 2^-23 at m = 16
    expect(canonicalButterfly(lanes)).toBe(1 + 2 ** -23);
    // in lane order the same four values give 1 (each tiny term meets the 1 alone)
    expect(sequential(CANONICAL_LANES, (l) => lanes[l])).toBe(1);
  });

  it('depends only on the terms: short sums, empty sums, -0.0 and a sum of exact squares', () => {
    expect(canonicalSumF32(0, () => 1)).toBe(0);
    expect(
      Object.is(
        canonicalSumF32(3, () => -0),
        0,
      ),
    ).toBe(true);
    expect(canonicalSumF32(5, (j) => j)).toBe(10);
    // a row of the HC norm (H = 2560: five 512-term steps), squares of bf16 values: 4096 then
    // ones. In order each 1 is lost against 2^24; v1 loses lane 0's 39 and keeps 63 lanes x 40
    const squares = (j: number) => (j === 0 ? 4096 * 4096 : 1);
    expect(sequential(2560, squares)).toBe(2 ** 24);
    expect(canonicalSumF32(2560, squares)).toBe(2 ** 24 + 63 * 40);
    expect(() => canonicalSumF32(-1, () => 0)).toThrow('canonical sum: -1 terms');
  });

  it('canonicalSumF32 (in place, no arrays) is the butterfly of the lane sums, bit for bit, also when a term sums itself', () => {
    const rng = mulberry32(22);
    for (const n of [1, 7, 8, 63, 511, 512, 513, 1030, 2560, 3001]) {
      const t = Float32Array.from({ length: n }, () => Math.fround((rng() - 0.5) * 2 ** Math.floor(rng() * 40 - 20)));
      const term = (j: number) => t[j];
      expect(canonicalSumF32(n, term)).toBe(canonicalButterfly(canonicalLaneSums(n, term)));
      // a term that is itself a canonical sum (the scratch lanes are the outer call's)
      const nested = (j: number) => canonicalSumF32(3, (k) => t[(j + k) % n]);
      expect(canonicalSumF32(n, nested)).toBe(canonicalButterfly(canonicalLaneSums(n, nested)));
    }
  });
});
