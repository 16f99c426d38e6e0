import { describe, expect, it } from 'vitest';
import { OP_CASES, type OpCase } from '@hcsp/bench/cases';
import { TINY } from '../../config/presets.ts';
import { ropeInvFreq, ropeTablesBf16 } from '../../layers/attention/ropeTables.ts';
import { qsaKeptPositions } from '../../layers/attention/qsaSelection.ts';
import { f32ToBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from '../kernels/index.ts';
import { attentionExact, ropeTablesExact } from './attentionExact.ts';
import { expectWithin, f64, roundedOnce, U_BF16, U_F32, widen, widenAll } from '../../../../../test/support/exactChecks.ts';
import type { ExactTensor } from './exactTensor.ts';

// The attention / QSA float64 kernels against the CPU reference on the op cases of
// packages/bench/src/cases/opCases.ts (the tiny config's shapes), the reference within a bound of the
// exact value derived from its roundings: U = 2^-8 per bf16 rounding, u = 2^-24 per fp32
// step, fp32 library functions (expF32, sigmoidF32) within a few u (fp32Math.ts). The
// selections (qsaSelect) must equal the reference's wherever the float64 scores are not
// within the reference's score error of a tie.

const exact = attentionExact.perRank!;
type AttnOp = 'attnHeadNormRopeBf16' | 'qsaBlockKeys' | 'qsaSelect' | 'qsaKeptCount' | 'attnCausalQsa' | 'attnOutputGate';

function opCase(name: string): OpCase {
  const c = OP_CASES.find((x) => x.name === name);
  if (!c) throw new Error(`no op case '${name}'`);
  return c;
}

function run(c: { op: string; inputs: (Tensor | null)[]; attrs: Record<string, unknown> }, exactInputs?: (ExactTensor | null)[]) {
  return { ref: cpuKernel(c.op)(c.inputs, c.attrs) as Tensor[], ex: exact[c.op as AttnOp]!(exactInputs ?? widenAll(c.inputs), c.attrs) };
}

/**
 * The error of a reference RoPE output (bf16-rounded products, their fp32 sum rounded to
 * bf16) against a1 c1 + a2 c2 exactly, given |a_ref - a| <= da (the normed inputs) and
 * |c_ref - c| <= dc (the tables): each product |bf(a' c') - a c| <= U (|a c| + e) + e with
 * e = |c| da + dc (|a| + da); the fp32 sum u, then one bf16 rounding (roundedOnce).
 */
function ropeBound(exactOut: number, a1: number, c1: number, da1: number, dc1: number, a2: number, c2: number, da2: number, dc2: number): number {
  const prod = (a: number, c: number, da: number, dc: number): number => {
    const e = Math.abs(c) * da + dc * (Math.abs(a) + da);
    return U_BF16 * (Math.abs(a * c) + e) + e;
  };
  const p1 = prod(a1, c1, da1, dc1);
  const p2 = prod(a2, c2, da2, dc2);
  return roundedOnce(exactOut, p1 + p2 + U_F32 * (Math.abs(a1 * c1) + Math.abs(a2 * c2) + p1 + p2));
}

/** The exact normed value n = x R (1 + w) of every head of every row (the test's own float64 evaluation, for the bound). */
function normed(x: Float64Array, w: Float64Array, rows: number, heads: number, hd: number, stride: number, eps: number): Float64Array {
  const n = new Float64Array(rows * heads * hd);
  for (let r = 0; r < rows; r++) {
    for (let h = 0; h < heads; h++) {
      const base = (r * heads + h) * stride;
      let ss = 0;
      for (let d = 0; d < hd; d++) ss += x[base + d] ** 2;
      const R = 1 / Math.sqrt(ss / hd + eps);
      for (let d = 0; d < hd; d++) n[(r * heads + h) * hd + d] = x[base + d] * R * (1 + w[d]);
    }
  }
  return n;
}

/**
 * |c_bf16 - cos(pos * inv_freq)| for the reference's table entry: one bf16 rounding of
 * fr(cos(angle')) with angle' = fr(pos * inv_freq_f32); inv_freq_f32 (fr of 2i/d, powf, fr
 * of 1/p: theta^e moves by ln(theta) e u under e's rounding, ln(1e7) = 16) is within 24 u
 * of theta^(-2i/d), so |angle' - angle| <= 25 u angle and cos/sin move by at most that.
 */
function tableError(value: number, angle: number): number {
  return U_BF16 * Math.abs(value) + (1 + U_BF16) * (25 * U_F32 * angle + U_F32);
}

describe('attention / QSA float64 kernels', () => {
  const { headDim: hd, ropeDims, numHeads: qh, indexer: ix } = TINY.attention;
  const half = ropeDims / 2;
  const eps = TINY.rmsNormEps;

  it('ropeTablesExact: float64 cos/sin of the float64 inv_freq * position, within the bf16 tables rounding of ropeTablesBf16', () => {
    const P = 300;
    const ex = ropeTablesExact(TINY, P);
    const ref = ropeTablesBf16(TINY, P);
    expect(ex.cos.shape).toEqual([P, half]);
    const inv = ropeInvFreq(ropeDims, TINY.attention.ropeTheta);
    for (const [name, e, r] of [
      ['cos', ex.cos, ref.cos],
      ['sin', ex.sin, ref.sin],
    ] as const) {
      expectWithin(`rope ${name}`, r, e, (j) => tableError(f64(e)[j], Math.floor(j / half) * inv[j % half]));
    }
    // position 1, frequency 1: cos(1) itself
    expect(f64(ex.cos)[half]).toBe(Math.cos(1));
  });

  it('attnHeadNormRopeBf16 (q with gate): same tables, and float64 tables', () => {
    const c = opCase('attnHeadNormRopeBf16 q with gate');
    const [x, w, cos, sin] = widenAll(c.inputs).map(f64);
    const rows = c.inputs[0]!.shape[0];
    const stride = 2 * hd;
    const n = normed(x, w, rows, qh, hd, stride, eps);
    // n_ref = bf(fr(x r') fr(1 + w)): r' (hd squares, the mean, eps, two rsqrt steps) and the
    // three fp32 products within (hd + 10) u, then one bf16 rounding: relative eta
    const eta = (1 + U_BF16) * (1 + (hd + 10) * U_F32) - 1;
    const inv = ropeInvFreq(ropeDims, TINY.attention.ropeTheta);
    const check = (label: string, ex: ExactTensor, ref: Tensor, c1: Float64Array, s1: Float64Array, tablesExact: boolean) => {
      const y = f64(ex);
      expectWithin(label, ref, ex, (i) => {
        const r = Math.floor(i / (qh * hd));
        const d = i % hd;
        const nb = i - d;
        if (d >= ropeDims) return eta * Math.abs(n[i]);
        const k = d % half;
        const cc = c1[r * half + k];
        const ss = s1[r * half + k];
        const dc = tablesExact ? tableError(cc, r * inv[k]) : 0;
        const ds = tablesExact ? tableError(ss, r * inv[k]) : 0;
        const n1 = n[nb + k];
        const n2 = n[nb + k + half];
        return d < half
          ? ropeBound(y[i], n1, cc, eta * Math.abs(n1), dc, -n2, ss, eta * Math.abs(n2), ds)
          : ropeBound(y[i], n2, cc, eta * Math.abs(n2), dc, n1, ss, eta * Math.abs(n1), ds);
      });
    };
    const same = run(c);
    check('same tables', same.ex[0]!, same.ref[0], cos, sin, false);
    const t = ropeTablesExact(TINY, rows);
    const withExact = run(c, [widen(c.inputs[0]!), widen(c.inputs[1]!), t.cos, t.sin]);
    check('float64 tables', withExact.ex[0]!, withExact.ref[0], f64(t.cos), f64(t.sin), true);
  });

  it('qsaBlockKeys: the pooled rounding carried through the norm, then RoPE at position ratio * b', () => {
    const c = opCase('qsaBlockKeys');
    const [k, w, cos, sin] = widenAll(c.inputs).map(f64);
    const T = c.inputs[0]!.shape[0];
    const dh = ix.headDim;
    const ratio = ix.compressRatio;
    const nb = Math.floor(T / ratio);
    const { ref, ex } = run(c);
    const y = f64(ex[0]);
    // pooled_ref = bf(fr(fp32 sum of ratio rows) / ratio): |dp| <= U |p| + (1 + U)(ratio u
    // sum|k| / ratio + u |p|). The norm n_j = p_j R (1 + w_j) moves by R |1 + w_j| (dp_j +
    // |p_j| rho) with rho = |dR / R| <= (1/2) dS / (S + dh eps - dS), dS = sum 2|p| dp + dp^2,
    // plus (dh + 10) u for the fp32 steps and one bf16 rounding; then RoPE (ropeBound).
    const dn = new Float64Array(nb * dh);
    const n = new Float64Array(nb * dh);
    for (let b = 0; b < nb; b++) {
      const p = new Float64Array(dh);
      const dp = new Float64Array(dh);
      for (let j = 0; j < dh; j++) {
        let s = 0;
        let a = 0;
        for (let r = 0; r < ratio; r++) {
          s += k[(b * ratio + r) * dh + j];
          a += Math.abs(k[(b * ratio + r) * dh + j]);
        }
        p[j] = s / ratio;
        dp[j] = U_BF16 * Math.abs(p[j]) + (1 + U_BF16) * (U_F32 * a + U_F32 * Math.abs(p[j]));
      }
      let S = 0;
      let dS = 0;
      for (let j = 0; j < dh; j++) {
        S += p[j] ** 2;
        dS += 2 * Math.abs(p[j]) * dp[j] + dp[j] ** 2;
      }
      const R = 1 / Math.sqrt(S / dh + eps);
      const rho = (0.5 * dS) / (S + dh * eps - dS);
      for (let j = 0; j < dh; j++) {
        n[b * dh + j] = p[j] * R * (1 + w[j]);
        const before = R * Math.abs(1 + w[j]) * (dp[j] + (Math.abs(p[j]) + dp[j]) * rho) + (dh + 10) * U_F32 * Math.abs(n[b * dh + j]);
        dn[b * dh + j] = roundedOnce(n[b * dh + j], before);
      }
    }
    expectWithin('qsaBlockKeys', ref[0], ex[0]!, (i) => {
      const b = Math.floor(i / dh);
      const d = i % dh;
      if (d >= ropeDims) return dn[i];
      const kk = d % half;
      const tb = b * ratio * half + kk;
      const base = i - d;
      const [n1, n2, d1, d2] = [n[base + kk], n[base + kk + half], dn[base + kk], dn[base + kk + half]];
      return d < half ? ropeBound(y[i], n1, cos[tb], d1, 0, -n2, sin[tb], d2, 0) : ropeBound(y[i], n2, cos[tb], d2, 0, n1, sin[tb], d1, 0);
    });
  });

  /** The float64 block scores of the op case and the reference's score error bound per row. */
  function scoresOf(c: OpCase): { scores: Float64Array[]; err: number[]; zero: Uint8Array[] } {
    const [q, kb] = widenAll(c.inputs).map(f64);
    const { r0, tokens, nHeads: nh, headDim: dh, compressRatio: ratio } = c.attrs as Record<string, number>;
    const rows = c.inputs[0]!.shape[0];
    const nb = Math.floor(tokens / ratio);
    const scores: Float64Array[] = [];
    const err: number[] = [];
    const zero: Uint8Array[] = [];
    for (let r = 0; r < Math.min(rows, tokens - r0); r++) {
      const visible = Math.min(nb, Math.floor((r0 + r + 1) / ratio));
      const s = new Float64Array(visible);
      const z = new Uint8Array(visible);
      let worst = 0;
      for (let b = 0; b < visible; b++) {
        let score = 0;
        let mag = 0;
        let negative = true;
        for (let h = 0; h < nh; h++) {
          let dot = 0;
          let dotMag = 0;
          for (let j = 0; j < dh; j++) {
            dot += q[(r * nh + h) * dh + j] * kb[b * dh + j];
            dotMag += Math.abs(q[(r * nh + h) * dh + j] * kb[b * dh + j]);
          }
          mag += dotMag;
          score += Math.max(dot, 0);
          // a dot below minus its fp32 error is negative on both sides: relu gives exactly 0
          if (!(dot < -dh * U_F32 * dotMag)) negative = false;
        }
        z[b] = negative ? 1 : 0;
        s[b] = score / Math.sqrt(dh);
        // fp32: dh adds per dot (exact bf16 products), nh adds, sqrt and the divide
        worst = Math.max(worst, ((dh + nh + 3) * U_F32 * mag) / Math.sqrt(dh));
      }
      scores.push(s);
      err.push(worst);
      zero.push(z);
    }
    return { scores, err, zero };
  }

  it('qsaSelect ties=torch-cpu: exactly equal block scores keep the blocks torch.topk on the CPU picks, as in the reference', () => {
    // one head of dim 2, q = [1, 0], block keys [s_b, 0]: score_b = relu(s_b) / sqrt(2); five
    // blocks tie at the largest, rows at positions 14 and 15 keep 3 of 7 and 8 blocks
    const bf = (shape: number[], v: number[]): Tensor => ({ dtype: 'bf16', shape, data: Uint16Array.from(v, (x) => f32ToBf16(x)) });
    const c = {
      op: 'qsaSelect',
      inputs: [bf([2, 2], [1, 0, 1, 0]), bf([8, 2], [1, 0, 2, 0, 2, 0, 1, 0, 2, 0, 0.5, 0, 2, 0, 2, 0])],
      attrs: { nHeads: 1, headDim: 2, compressRatio: 2, width: 3, r0: 14, tokens: 16, ties: 'torch-cpu' },
    };
    const { ref, ex } = run(c);
    expect(Array.from(ex[0]!.data)).toEqual(Array.from(ref[0].data));
    // the default rule keeps the lowest three of the tied blocks, 1 2 4, in both rows
    expect(Array.from(ex[0]!.data)).not.toEqual([1, 2, 4, 1, 2, 4]);
    expect(Array.from(run({ ...c, attrs: { ...c.attrs, ties: 'lower-index' } }).ex[0]!.data)).toEqual([1, 2, 4, 1, 2, 4]);
  });

  it('qsaSelect (row shard with padding rows): the float64 selection equals the reference wherever no near-tie decides', () => {
    const c = opCase('qsaSelect row shard with padding rows');
    const { ref, ex } = run(c);
    const width = c.attrs.width as number;
    expect(ex[0]!.dtype).toBe('i32');
    expect(ex[0]!.shape).toEqual(ref[0].shape);
    const { scores, err, zero } = scoresOf(c);
    const refB = ref[0].data as Int32Array;
    const exB = ex[0]!.data as Int32Array;
    let decided = 0;
    for (let r = 0; r < ref[0].shape[0]; r++) {
      const rowR = Array.from(refB.subarray(r * width, (r + 1) * width));
      const rowE = Array.from(exB.subarray(r * width, (r + 1) * width));
      if (r >= scores.length) {
        expect(rowE, `padding row ${r}`).toEqual(Array(width).fill(-1));
        continue;
      }
      const sorted = Float64Array.from(scores[r]).sort().reverse();
      // the selection is decided when the width-th and (width+1)-th scores are further
      // apart than both sides' errors (float64's is negligible), or when the cut falls in a
      // tie at 0 that is exact on both sides: every score within 2 err of 0 is a block whose
      // every head's dot is clearly negative (relu: exactly 0 in fp32 too), so the tie rule
      // (lower index) decides identically
      const margin = sorted.length > width ? sorted[width - 1] - sorted[width] : Infinity;
      const exactZeroTie = sorted[width - 1] === 0 && scores[r].every((x, b) => zero[r][b] === 1 || x > 2 * err[r]);
      if (margin > 2 * err[r] || exactZeroTie) {
        decided++;
        expect(rowE, `row ${r}`).toEqual(rowR);
      }
    }
    // every real row of this case is decided (row 4 by an exact tie at 0): the equality above covers all 14
    expect(decided).toBe(scores.length);
  });

  it('qsaSelect: exact ties go to the lower block index, as the reference', () => {
    const rng = new Rng(5);
    const tokens = 40;
    const nb = tokens / ix.compressRatio;
    const width = ix.budget / ix.compressRatio;
    const kbData = rng.fillBf16Normal(nb * ix.headDim, 1);
    // blocks 2, 5, 7 and 9 share one key: equal scores, in float64 and in fp32
    for (const b of [5, 7, 9]) kbData.copyWithin(b * ix.headDim, 2 * ix.headDim, 3 * ix.headDim);
    const q: Tensor = { dtype: 'bf16', shape: [tokens, ix.nHeads * ix.headDim], data: rng.fillBf16Normal(tokens * ix.nHeads * ix.headDim, 1) };
    const c = {
      op: 'qsaSelect',
      inputs: [q, { dtype: 'bf16', shape: [nb, ix.headDim], data: kbData } as Tensor],
      attrs: { r0: 0, tokens, nHeads: ix.nHeads, headDim: ix.headDim, compressRatio: ix.compressRatio, width },
    };
    const { ref, ex } = run(c);
    expect(Array.from(ex[0]!.data)).toEqual(Array.from(ref[0].data));
  });

  it('qsaKeptCount: integer, equal to the reference', () => {
    const c = opCase('qsaSelect row shard with padding rows');
    const blocks = cpuKernel('qsaSelect')(c.inputs, c.attrs)[0]!;
    const attn = opCase('attnCausalQsa');
    for (const b of [blocks, attn.inputs[3]!]) {
      const attrs = { compressRatio: ix.compressRatio };
      const ref = cpuKernel('qsaKeptCount')([b], attrs)[0]!;
      const ex = exact.qsaKeptCount!([widen(b)], attrs)[0]!;
      expect(ex.dtype).toBe('i32');
      expect(Array.from(ex.data)).toEqual(Array.from(ref.data));
    }
  });

  it('attnCausalQsa: within the bf16 output rounding plus the fp32 softmax error', () => {
    const c = opCase('attnCausalQsa');
    const { heads, kvHeads, headDim: d0, scale, width, compressRatio } = c.attrs as Record<string, number>;
    const [q, k, v] = widenAll(c.inputs).map((t, i) => (i < 3 ? f64(t) : new Float64Array()));
    const T = c.inputs[0]!.shape[0];
    const { ref, ex } = run(c);
    const o = f64(ex[0]);
    const sel = { r0: 0, rows: T, width, compressRatio, blocks: c.inputs[3]!.data as Int32Array };
    const keys = new Int32Array(T);
    const group = heads / kvHeads;
    // s_j' = fr(fp32 dot * scale): |ds_j| <= (d0 + 1) u scale sum|q k| + u |s|; p_j =
    // expF32(fr(s_j' - m')) then moves by a relative eta = 2 max|ds| + u (max|s - m| + 3);
    // o = sum p v / sum p moves by at most 2 eta' A with A = max_j |v_j[d]| (>= sum p|v| / l),
    // the fp32 sums add 2 (n + 2) u A; then one bf16 rounding.
    const bound = new Float64Array(o.length);
    for (let t = 0; t < T; t++) {
      const n = qsaKeptPositions(sel, t, keys);
      for (let h = 0; h < heads; h++) {
        const kvh = Math.floor(h / group);
        const s = new Float64Array(n);
        let ds = 0;
        for (let i = 0; i < n; i++) {
          let dot = 0;
          let mag = 0;
          for (let d = 0; d < d0; d++) {
            dot += q[(t * heads + h) * d0 + d] * k[(keys[i] * kvHeads + kvh) * d0 + d];
            mag += Math.abs(q[(t * heads + h) * d0 + d] * k[(keys[i] * kvHeads + kvh) * d0 + d]);
          }
          s[i] = dot * scale;
          ds = Math.max(ds, (d0 + 1) * U_F32 * scale * mag + U_F32 * Math.abs(s[i]));
        }
        const m = Math.max(...s);
        const spread = Math.max(...s.map((x) => m - x));
        const eta = Math.expm1(2 * ds + U_F32 * (spread + 3));
        for (let d = 0; d < d0; d++) {
          let A = 0;
          for (let i = 0; i < n; i++) A = Math.max(A, Math.abs(v[(keys[i] * kvHeads + kvh) * d0 + d]));
          const at = (t * heads + h) * d0 + d;
          bound[at] = roundedOnce(o[at], (2 * eta + 2 * (n + 2) * U_F32) * A);
        }
      }
    }
    expectWithin('attnCausalQsa', ref[0], ex[0]!, (i) => bound[i]);
  });

  it('attnOutputGate: within two bf16 roundings of o * sigmoid(gate)', () => {
    const rng = new Rng(8);
    const T = 9;
    const o: Tensor = { dtype: 'bf16', shape: [T, qh * hd], data: rng.fillBf16Normal(T * qh * hd, 1) };
    const qg: Tensor = { dtype: 'bf16', shape: [T, qh * 2 * hd], data: rng.fillBf16Normal(T * qh * 2 * hd, 2) };
    const { ref, ex } = run({ op: 'attnOutputGate', inputs: [o, qg], attrs: { heads: qh, headDim: hd } });
    const y = f64(ex[0]);
    // bf(o bf(sigmoidF32(g))): sigmoidF32 within 8 u, two roundings of a product
    const rel = (1 + U_BF16) ** 2 * (1 + 8 * U_F32) - 1;
    expectWithin('attnOutputGate', ref[0], ex[0]!, (i) => rel * Math.abs(y[i]));
  });
});
