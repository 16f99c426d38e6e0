import { describe, it, expect } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { mulberry32 } from '../../../../test/support/mulberry32.ts';
import { REDUCE_ALGORITHMS } from '../graph/ops/spOps.ts';
import { reduceElement, reduceInto } from './reduceOrder.ts';

/** A random finite bf16 pattern with exponent near 1, so sums round in interesting places. */
function randomBf16(next: () => number): number {
  return f32ToBf16((next() - 0.5) * 2 ** Math.floor(next() * 8 - 4));
}

const bits = (x: number): number => f32ToBf16(x);

describe('reduceOrder', () => {
  it('tp = 1: every flavour returns x0 unchanged, NaN payload and -0 included', () => {
    for (const x of [0x3f80, 0x8000, 0x7f81, 0xffc1, 0x0001, 0x7f80]) {
      for (const alg of REDUCE_ALGORITHMS) expect(reduceElement(alg, [x], 0)).toBe(x);
    }
  });

  it('tp = 2: every flavour and owner gives bf(a + b) (200k random pairs, 100k of them any bit pattern)', () => {
    const next = mulberry32(1);
    const n = 200_000;
    // First half near 1 (rounding ties are common), second half any pattern (inf, NaN, subnormals).
    const draw = (i: number): number => (i < n / 2 ? randomBf16(next) : Math.floor(next() * 0x10000));
    const a = Uint16Array.from({ length: n }, (_, i) => draw(i));
    const b = Uint16Array.from({ length: n }, (_, i) => draw(i));
    const expected = a.map((ai, i) => f32ToBf16(Math.fround(bf16ToF32(ai) + bf16ToF32(b[i]))));
    const runs: [string, (out: Uint16Array) => void][] = [
      ['ring owner 0', (out) => reduceInto('ring', 0, [a, b], 0, n, out, 0)],
      ['ring owner 1', (out) => reduceInto('ring', 1, [a, b], 0, n, out, 0)],
      ['oneshot', (out) => reduceInto('oneshot', 0, [a, b], 0, n, out, 0)],
      ['ordered', (out) => reduceInto('ordered', 0, [a, b], 0, n, out, 0)],
    ];
    for (const [name, run] of runs) {
      const out = new Uint16Array(n);
      run(out);
      const firstBad = out.findIndex((v, i) => v !== expected[i]);
      expect(firstBad, `${name}: first mismatch at ${firstBad}`).toBe(-1);
    }
  });

  // x = [1, 2^-8, -1, 2^-9]; bf16 has 8 significant bits, so ulp(1) = 2^-7, ulp in [0.5, 1) is 2^-8.
  // exact sum 3*2^-9 (bf16 0x3BC0).
  // oneshot (fp32, exact here): 1 + 2^-8 - 1 + 2^-9 = 3*2^-9 -> 0x3BC0.
  // ordered: bf(1 + 2^-8) = 1 (tie, to even); bf(1 - 1) = 0; bf(0 + 2^-9) = 2^-9 -> 0x3B00.
  // ring owner 0 (x1, x2, x3, x0): 2^-8; bf(-1 + 2^-8) = -(1 - 2^-8) exact;
  //   bf(2^-9 - (1 - 2^-8)) = -(1 - 3*2^-9): a tie between -(1 - 2^-8) (odd) and
  //   -(1 - 2^-7) (even) -> -(1 - 2^-7); bf(1 - (1 - 2^-7)) = 2^-7 -> 0x3C00.
  // ring owner 1 (x2, x3, x0, x1): -1; bf(2^-9 - 1): tie between -1 (even) and
  //   -(1 - 2^-8) (odd) -> -1; bf(1 - 1) = 0; bf(2^-8 + 0) = 2^-8 -> 0x3B80.
  // ring owner 2 (x3, x0, x1, x2): 2^-9; bf(1 + 2^-9) = 1; bf(2^-8 + 1) = 1 (tie, even);
  //   bf(-1 + 1) = 0 -> 0x0000.
  // ring owner 3 (x0, x1, x2, x3): the ordered chain again -> 0x3B00.
  const handX = [bits(1), bits(2 ** -8), bits(-1), bits(2 ** -9)];

  it('4 ranks, hand-computed: the order decides the last bits', () => {
    expect(handX).toEqual([0x3f80, 0x3b80, 0xbf80, 0x3b00]);
    expect(reduceElement('oneshot', handX)).toBe(0x3bc0);
    expect(reduceElement('ordered', handX)).toBe(0x3b00);
    expect(reduceElement('ring', handX, 0)).toBe(0x3c00);
    expect(reduceElement('ring', handX, 1)).toBe(0x3b80);
    expect(reduceElement('ring', handX, 2)).toBe(0x0000);
    expect(reduceElement('ring', handX, 3)).toBe(0x3b00);
  });

  it('rank-stamped integers: every flavour and owner gives the exact integer sum', () => {
    for (const tp of [1, 2, 3, 4, 5, 8]) {
      const n = 257;
      // rank k, element i: a small signed integer; every partial sum stays within |256|, exact in bf16.
      const value = (k: number, i: number): number => ((i % 11) - 5) * (k + 1) + (k % 2 === 0 ? 1 : -2);
      const partials = Array.from({ length: tp }, (_, k) => Uint16Array.from({ length: n }, (_, i) => bits(value(k, i))));
      for (const alg of REDUCE_ALGORITHMS) {
        for (let owner = 0; owner < tp; owner++) {
          const out = new Uint16Array(n);
          reduceInto(alg, owner, partials, 0, n, out, 0);
          const wrong: string[] = [];
          for (let i = 0; i < n; i++) {
            let sum = 0;
            for (let k = 0; k < tp; k++) sum += value(k, i);
            if (bf16ToF32(out[i]) !== sum) wrong.push(`${alg} tp=${tp} owner=${owner} i=${i}: ${bf16ToF32(out[i])} != ${sum}`);
          }
          expect(wrong).toEqual([]);
        }
      }
    }
  });

  it('reduceInto writes exactly [start, end) at outStart', () => {
    const partials = [Uint16Array.of(bits(1), bits(2), bits(3)), Uint16Array.of(bits(10), bits(20), bits(30))];
    const out = new Uint16Array(4).fill(0xffff);
    reduceInto('ring', 1, partials, 1, 3, out, 2);
    expect(Array.from(out)).toEqual([0xffff, 0xffff, bits(22), bits(33)]);
  });

  it('bad input: unknown algorithm and owner out of range are named', () => {
    const p = [Uint16Array.of(0), Uint16Array.of(0)];
    const out = new Uint16Array(1);
    expect(() => reduceInto('tree' as never, 0, p, 0, 1, out, 0)).toThrow(/"tree"/);
    expect(() => reduceInto('ring', 2, p, 0, 1, out, 0)).toThrow(/owner 2/);
    expect(() => reduceElement('ordered', [])).toThrow(/tp = 0/);
  });
});
