import { describe, expect, it } from 'vitest';
import { OP_CASES, type OpCase } from '@hcsp/bench/cases';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from '../kernels/index.ts';
import { expectWithin, f64, roundedOnce, U_BF16, U_F32, widen, widenAll } from '../../../../../test/support/exactChecks.ts';
import { pleExact } from './pleExact.ts';

// The PLE float64 kernels against the CPU reference on the PLE op cases of
// packages/bench/src/cases/opCases.ts (the tiny config's layer-1 constants), the reference within a bound
// of the exact value derived from its roundings: U = 2^-8 per bf16 rounding, u = 2^-24 per
// fp32 step, fp32 library functions within a few u. The ids (integer hashing) and the
// embedding (a gather) must be identical.

const exact = pleExact.perRank!;
type PleOp = 'pleNgramIds' | 'pleNgramEmbed' | 'pleRms1pNorm' | 'pleGate' | 'pleGatedValue' | 'pleConvSilu';

function opCase(op: PleOp): OpCase {
  const c = OP_CASES.find((x) => x.op === op);
  if (!c) throw new Error(`no op case for ${op}`);
  return c;
}

function run(c: OpCase) {
  return { ref: cpuKernel(c.op)(c.inputs, c.attrs) as Tensor[], ex: exact[c.op as PleOp]!(widenAll(c.inputs), c.attrs) };
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

describe('PLE float64 kernels', () => {
  it('pleNgramIds: the reference ids, i32', () => {
    const { ref, ex } = run(opCase('pleNgramIds'));
    expect(ex[0]!.dtype).toBe('i32');
    expect(ex[0]!.shape).toEqual(ref[0].shape);
    expect(Array.from(ex[0]!.data)).toEqual(Array.from(ref[0].data));
  });

  it('pleNgramEmbed: the gathered rows, exactly (also from a row-gathered table with renumbered ids)', () => {
    const c = opCase('pleNgramEmbed');
    const { ref, ex } = run(c);
    expect(ex[0]!.shape).toEqual(ref[0].shape);
    expect(Array.from(ex[0]!.data)).toEqual(Array.from(widen(ref[0]).data));
    // what GraphSession.hostInputs hands a row-gathered table: only the rows the ids name
    // (here: in first-use order), the ids renumbered into them; the output is the same
    const ids = c.inputs[0]!.data as Int32Array;
    const table = c.inputs[1]!;
    const hd = table.shape[1];
    const rows = [...new Set(ids)];
    const local = Int32Array.from(ids, (id) => rows.indexOf(id));
    const gathered: Tensor = {
      dtype: 'bf16',
      shape: [rows.length, hd],
      data: Uint16Array.from(rows.flatMap((r) => Array.from((table.data as Uint16Array).subarray(r * hd, (r + 1) * hd)))),
    };
    const ex2 = exact.pleNgramEmbed!(widenAll([{ ...c.inputs[0]!, data: local }, gathered]), {});
    expect(Array.from(ex2[0]!.data)).toEqual(Array.from(ex[0]!.data));
  });

  it('pleRms1pNorm: within one bf16 rounding of the exact grouped RMS1p', () => {
    const c = opCase('pleRms1pNorm');
    const { ref, ex } = run(c);
    const gs = c.inputs[0]!.shape[1] / (c.attrs.groups as number);
    const y = f64(ex[0]);
    // bf(fr(fr(x rstd') fr(1 + w))): rstd' (gs squares, the mean, eps, two steps) and the
    // fp32 products within (gs + 10) u relative, then one rounding of a product
    const rel = (1 + U_BF16) * (1 + (gs + 10) * U_F32) - 1;
    expectWithin('pleRms1pNorm', ref[0], ex[0]!, (i) => rel * Math.abs(y[i]));
  });

  it('pleGate: within the bound carried through the rounded products, score, root and gate', () => {
    const c = opCase('pleGate');
    const { ref, ex } = run(c);
    const [k, q] = widenAll(c.inputs).map(f64);
    const n = c.attrs.streams as number;
    const H = c.inputs[0]!.shape[1] / n;
    const gate = f64(ex[0]);
    // p_j = bf(k q): U |k q| each; the fp32 sum of H of them: H u P (P = sum|k q|); bf(sum),
    // fr(/ sqrtF32(H)) and bf again; max with the floor and bf; sqrtF32 and bf: |sqrt(a') -
    // sqrt(a)| = |a' - a| / (sqrt(a') + sqrt(a)) with both a >= 1e-6 (1 - U); the sign moves
    // only when |s| <= ds (then g may move by 2 root + droot); sigmoid' <= 1/4, sigmoidF32 8 u;
    // then one bf16 rounding.
    expectWithin('pleGate', ref[0], ex[0]!, (r) => {
      let S = 0;
      let P = 0;
      for (let j = 0; j < H; j++) {
        S += k[r * H + j] * q[r * H + j];
        P += Math.abs(k[r * H + j] * q[r * H + j]);
      }
      const dAcc = U_BF16 * P + H * U_F32 * P * (1 + U_BF16);
      const d1 = U_BF16 * (Math.abs(S) + dAcc) + dAcc;
      const sqrtH = Math.sqrt(H);
      const s = S / sqrtH;
      const d = d1 / sqrtH + 2 * U_F32 * (Math.abs(s) + d1 / sqrtH);
      const ds = U_BF16 * (Math.abs(s) + d) + d;
      const a = Math.max(Math.abs(s), 1e-6);
      const dMax = ds + 1e-6 * U_F32;
      const da = U_BF16 * (a + dMax) + dMax;
      const root = Math.sqrt(a);
      const dSq = da / (root + Math.sqrt(Math.max(a - da, 0.99e-6)));
      const dSq2 = dSq + U_F32 * (root + dSq);
      const dRoot = U_BF16 * (root + dSq2) + dSq2;
      const dg = Math.abs(s) > ds ? dRoot : 2 * root + dRoot;
      return roundedOnce(gate[r], dg / 4 + 8 * U_F32 * gate[r]);
    });
  });

  it('pleGatedValue: within one bf16 rounding of gate * value (an exact fp32 product)', () => {
    const c = opCase('pleGatedValue');
    const { ref, ex } = run(c);
    const y = f64(ex[0]);
    expectWithin('pleGatedValue', ref[0], ex[0]!, (i) => U_BF16 * Math.abs(y[i]));
  });

  it('pleConvSilu: within the bound carried through the rounded conv, silu and the add', () => {
    const c = opCase('pleConvSilu');
    const { ref, ex } = run(c);
    const [gn, g, w] = widenAll(c.inputs).map(f64);
    const C = c.inputs[1]!.shape[1];
    const K = c.inputs[2]!.shape[2];
    const dil = c.attrs.dilation as number;
    const out = f64(ex[0]);
    // conv: K fp32 adds of exact bf16 products (K u M, M = sum|w Gn|), bf; silu' <= 1.1,
    // siluF32 8 u, bf; the fp32 add to G, one bf16 rounding
    expectWithin('pleConvSilu', ref[0], ex[0]!, (idx) => {
      const t = Math.floor(idx / C);
      const ch = idx % C;
      let conv = 0;
      let M = 0;
      for (let i = 0; i < K; i++) {
        const src = t - (K - 1 - i) * dil;
        if (src < 0) continue;
        conv += w[ch * K + i] * gn[src * C + ch];
        M += Math.abs(w[ch * K + i] * gn[src * C + ch]);
      }
      const dConv = K * U_F32 * M;
      const dc1 = U_BF16 * (Math.abs(conv) + dConv) + dConv;
      const act = silu(conv);
      const d1 = 1.1 * dc1 + 8 * U_F32 * (Math.abs(act) + 1.1 * dc1);
      const dAct = U_BF16 * (Math.abs(act) + d1) + d1;
      return roundedOnce(out[idx], dAct + U_F32 * (Math.abs(g[idx]) + Math.abs(act) + dAct));
    });
  });
});
