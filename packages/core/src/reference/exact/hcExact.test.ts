import { describe, expect } from 'vitest';
import { OP_CASES } from '@hcsp/bench/cases';
import { sigmoid } from './basicExact.ts';
import { checkBound, gamma32, familyTests, U_F32, U_BF16, valuesOf } from '../../../../../test/support/exactChecks.ts';

// The HC ops: the CPU reference against the float64 kernels on every op case of the family.
// Each bound follows the reference's roundings (hc/combineNorm.ts, hc/mix.ts); fp32 sigmoid
// and silu (numerics/fp32Math.ts) are within 2 ulps for exp plus two rounded steps: 6 U_F32
// relative is taken for each. Every bound is of the form U_BF16 (|exact| + a) + a, where a bounds
// the error of the fp32 value the reference rounds to bf16 last.
const OPS = ['hcExpand', 'hcCombineNorm', 'hcScaledSilu', 'hcGatedMean', 'hcCombine'];
const cases = OP_CASES.filter((c) => OPS.includes(c.op));
const SIG = 6 * U_F32;

const lastRounding = (e: number, a: number): number => U_BF16 * (Math.abs(e) + a) + a;

/**
 * The bound on the combined X (pending combine, hcCombine): X_s + y * inj_s with inj_s =
 * 2 sigmoid(z_s), z_s = raw_s / n. The reference rounds z to fp32 and bf16 (U_BF16 + 2 U_F32
 * relative), and sigmoid' <= 1/4, so |d sigmoid| <= |dz| / 4 + SIG sigmoid ('hf' also stores
 * sigmoid as bf16: + U_BF16 sigmoid); the product y * inj rounds to fp32 ('hf': to bf16 too), the
 * sum X + p to fp32, then to bf16.
 */
function combineTol(y: Float64Array, raw: Float64Array, exactX: Float64Array, n: number, h: number, hf: boolean): (i: number) => number {
  const width = n * h;
  return (i) => {
    const t = Math.floor(i / width);
    const s = Math.floor((i % width) / h);
    const j = i % h;
    const z = raw[t * n + s] / n;
    const sig = sigmoid(z);
    const dSig = ((U_BF16 + 2 * U_F32) * Math.abs(z)) / 4 + (SIG + (hf ? U_BF16 : 0)) * sig;
    const yv = Math.abs(y[t * h + j]);
    const injMax = 2 * (sig + dSig);
    const dProd = yv * 2 * dSig + (U_F32 + (hf ? U_BF16 : 0)) * yv * injMax;
    const a = dProd + U_F32 * (Math.abs(exactX[i]) + dProd);
    return lastRounding(exactX[i], a);
  };
}

describe('HC exact kernels against the CPU reference', () => {
  familyTests(cases, OPS, (c, { ref, exact, inputs }) => {
    expect(exact.length).toBe(ref.length);
    for (const [p, r] of ref.entries()) {
      const e = exact[p];
      if (r === null) {
        expect(e).toBeNull();
        continue;
      }
      expect(e!.dtype).toBe(r.dtype);
      expect(e!.shape).toEqual(r.shape);
    }
    const n = c.attrs.streams as number;
    const hf = c.attrs.contract === 'hf';
    const inV = inputs.map((t) => (t ? (t.data as Float64Array) : null));
    const ev = exact.map((t) => (t ? (t.data as Float64Array) : null));
    const rv = ref.map((t) => (t ? valuesOf(t) : null));
    const check = (p: number, tol: (i: number) => number, rounds: boolean): void => {
      const report = checkBound(rv[p]!, ev[p]!, tol, `${c.name} port ${p}`);
      expect(report.exceeded, report.describe).toBe(0);
      if (rounds) expect(report.worstRatio, report.describe).toBeGreaterThan(0);
    };
    switch (c.op) {
      case 'hcExpand':
        check(0, () => 0, false);
        break;
      case 'hcCombine': {
        const width = inputs[0]!.shape[1];
        check(0, combineTol(inV[1]!, inV[2]!, ev[0]!, n, width / n, hf), true);
        break;
      }
      case 'hcCombineNorm': {
        const width = inputs[0]!.shape[1];
        const h = width / n;
        const pending = inputs[1] !== null;
        check(0, pending ? combineTol(inV[1]!, inV[2]!, ev[0]!, n, h, hf) : () => 0, pending);
        // normed = bf(fl(fl(X' rstd') fl(1 + w))) from the reference's own rounded X' (checked
        // above against the exact X): |X' rstd' s - X rstd s| <= |X' - X| rstd' |s| +
        // |X| |s| |rstd' - rstd|, where rstd' is within (H/2 + 6) U_F32 of rstd(X') in double
        // (an fp32 sum of H squares: gamma_H relative, halved by the square root; /H, + eps,
        // sqrt and 1/x each one more rounding), and rstd(X') - rstd(X) is measured; the two
        // fp32 products and fl(1 + w) add 3 U_F32 relative, then bf16.
        const eps = c.attrs.eps as number;
        const xR = rv[0]!;
        const xE = ev[0]!;
        const w = inV[3]!;
        const rstdOf = (v: Float64Array, base: number): number => {
          let s = 0;
          for (let j = 0; j < h; j++) s += v[base + j] * v[base + j];
          return 1 / Math.sqrt(s / h + eps);
        };
        check(
          1,
          (i) => {
            const base = i - (i % h);
            const rR = rstdOf(xR, base);
            const rE = rstdOf(xE, base);
            const dOwn = (gamma32(h) / 2 + 6 * U_F32) * rR;
            const sc = Math.abs(1 + w[i % width]);
            const a =
              Math.abs(xR[i] - xE[i]) * (rR + dOwn) * sc + Math.abs(xE[i]) * sc * (Math.abs(rR - rE) + dOwn) + 3 * U_F32 * Math.abs(xR[i]) * (rR + dOwn) * sc;
            return lastRounding(ev[1]![i], a);
          },
          true,
        );
        break;
      }
      case 'hcScaledSilu': {
        // gate = bf(silu(bf(fl(d / n)))): z = d / n rounded (U_BF16 + 2 U_F32 relative), |silu'| <=
        // 1.1, silu in fp32 (SIG relative of its value) then bf16; raw is a copy.
        const d = inV[0]!;
        const lowRank = c.attrs.lowRank as number;
        const width = inputs[0]!.shape[1];
        check(
          0,
          (i) => {
            const z = d[Math.floor(i / lowRank) * width + (i % lowRank)] / n;
            const dz = (U_BF16 + 2 * U_F32) * Math.abs(z);
            const a = 1.1 * dz + SIG * (Math.abs(ev[0]![i]) + 1.1 * dz) + 1e-37;
            return lastRounding(ev[0]![i], a);
          },
          true,
        );
        if (ref[1]) check(1, () => 0, false);
        break;
      }
      case 'hcGatedMean': {
        // x = bf(fl(acc / n)), acc the fp32 sum of the n products p_s: 'atom' p_s =
        // fl(sigmoidF32(up) normed) (SIG + U_F32 relative), 'hf' bf16-rounds the sigmoid and the
        // product (2 U_BF16 + U_BF16^2 more); the n-term sum adds gamma_n of sum |p_s|, the division
        // one U_F32. With A = sum_s |sigmoid(up_s) normed_s|: a = (per-term + gamma_n + U_F32) A / n.
        const up = inV[0]!;
        const nd = inV[1]!;
        const h = inputs[1]!.shape[1] / n;
        const perTerm = SIG + U_F32 + (hf ? 2.01 * U_BF16 : 0);
        check(
          0,
          (i) => {
            const t = Math.floor(i / h);
            const j = i % h;
            let A = 0;
            for (let s = 0; s < n; s++) A += Math.abs(sigmoid(up[t * n * h + s * h + j]) * nd[t * n * h + s * h + j]);
            const a = ((perTerm + gamma32(n) + 2 * U_F32) * A) / n;
            return lastRounding(ev[0]![i], a);
          },
          true,
        );
        break;
      }
    }
  });
});
