import { describe, expect } from 'vitest';
import { OP_CASES } from '@hcsp/bench/cases';
import { fp8Info, type Fp8Format } from '../../numerics/fp8.ts';
import { sigmoid } from './basicExact.ts';
import { checkBound, gamma32, familyTests, U_F32, U_BF16, U_FP8, valuesOf } from '../../../../../test/support/exactChecks.ts';

// The FP8 PTPC ops: the CPU reference against the float64 kernels on every op case of the
// family. The exact side does not quantize (q = x, scale 1), so a quantize op is checked through
// what its outputs mean, the dequantized values q * scale, against the exact values.
const OPS = ['quantFp8PerToken', 'hcGatedMeanQuant', 'fp8QuantWeightPerChannel', 'fp8LinearPtpc'];
const cases = OP_CASES.filter((c) => OPS.includes(c.op));
const SIG = 6 * U_F32;

/** q * scale per row, in double (exact: fp8 times fp32). */
function dequant(q: Float64Array, scale: Float64Array, cols: number): Float64Array {
  return q.map((v, i) => v * scale[Math.floor(i / cols)]);
}

/**
 * The reference's per-token quantization error: v = x / scale (or x * fl(1/scale)) in fp32
 * (2 U_F32 relative), cvt to fp8 rounds to nearest (U_FP8 relative on normals, half the subnormal
 * step 2^(eMin-3) below them) and saturates at fp8_max (the scale's rounding can put amax / scale
 * at most ~2 U_F32 above it); dequantized with the fp32 scale: |q s - x| <= (U_FP8 + 4 U_F32) |x| +
 * 2^(eMin-4) s.
 */
function quantTol(x: number, scale: number, format: Fp8Format): number {
  const eMin = 1 - fp8Info(format).bias;
  return (U_FP8 + 4 * U_F32) * Math.abs(x) + 2 ** (eMin - 4) * scale;
}

describe('FP8 PTPC exact kernels against the CPU reference', () => {
  familyTests(cases, OPS, (c, { ref, exact, inputs }) => {
    expect(exact.length).toBe(ref.length);
    for (const [p, r] of ref.entries()) {
      expect(exact[p]!.dtype).toBe(r!.dtype);
      expect(exact[p]!.shape).toEqual(r!.shape);
    }
    const format = c.attrs.format as Fp8Format;
    const rv = ref.map((t) => valuesOf(t!));
    const ev = exact.map((t) => t!.data as Float64Array);
    const expectWithin = (refV: Float64Array, exactV: Float64Array, tol: (i: number) => number, what: string): void => {
      const report = checkBound(refV, exactV, tol, `${c.name} ${what}`);
      expect(report.exceeded, report.describe).toBe(0);
      expect(report.worstRatio, report.describe).toBeGreaterThan(0);
    };
    if (c.op === 'fp8LinearPtpc') {
      // same fp8 operands on both sides: the reference sums the exact fp8 x fp8 products in
      // fp32 (gamma_K of A = sum_k |q qW|), scales twice in fp32 (2 U_F32), rounds to bf16;
      // the exact side is sx sw sum_k q qW in double.
      const k = inputs[0]!.shape[1];
      const outF = inputs[2]!.shape[0];
      const [q, sx, qw, sw] = inputs.map((t) => t!.data as Float64Array);
      expectWithin(
        rv[0],
        ev[0],
        (i) => {
          const t = Math.floor(i / outF);
          const o = i % outF;
          let A = 0;
          for (let j = 0; j < k; j++) A += Math.abs(q[t * k + j] * qw[o * k + j]);
          const a = Math.abs(sx[t] * sw[o]) * gamma32(k) * A + 3 * U_F32 * Math.abs(ev[0][i]);
          return U_BF16 * (Math.abs(ev[0][i]) + a) + a;
        },
        'y',
      );
      return;
    }
    // the quantize ops: q holds the exact values and the scales are 1
    const qPort = c.op === 'hcGatedMeanQuant' ? 1 : 0;
    const xExact = c.op === 'hcGatedMeanQuant' ? ev[0] : (inputs[0]!.data as Float64Array);
    expect(Array.from(ev[qPort])).toEqual(Array.from(xExact));
    expect(ev[qPort + 1].every((s) => s === 1)).toBe(true);
    const cols = ref[qPort]!.shape[1];
    const deq = dequant(rv[qPort], rv[qPort + 1], cols);
    const scaleOf = (i: number) => rv[qPort + 1][Math.floor(i / cols)];
    if (c.op !== 'hcGatedMeanQuant') {
      expectWithin(deq, xExact, (i) => quantTol(xExact[i], scaleOf(i), format), 'q * scale');
      return;
    }
    // hcGatedMeanQuant: x as hcGatedMean 'atom' (its bound: bf16 of the fp32 mean, whose error
    // is (SIG + U_F32 + gamma_n + 2 U_F32) A / n with A = sum_s |sigmoid(up_s) normed_s|); q * scale
    // quantizes the reference's own bf16 x, so its bound is that of x plus the quantization's.
    const n = c.attrs.streams as number;
    const h = cols;
    const [up, nd] = inputs.map((t) => t!.data as Float64Array);
    const xTol = (i: number): number => {
      const t = Math.floor(i / h);
      const j = i % h;
      let A = 0;
      for (let s = 0; s < n; s++) A += Math.abs(sigmoid(up[t * n * h + s * h + j]) * nd[t * n * h + s * h + j]);
      const a = ((SIG + U_F32 + gamma32(n) + 2 * U_F32) * A) / n;
      return U_BF16 * (Math.abs(xExact[i]) + a) + a;
    };
    expectWithin(rv[0], xExact, xTol, 'x');
    expectWithin(deq, xExact, (i) => xTol(i) + quantTol(rv[0][i], scaleOf(i), format), 'q * scale');
  });
});
