import { describe, expect, it } from 'vitest';
import { f32ToBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from '../kernels/index.ts';
import { expectWithin, f64, roundedOnce, U_BF16, U_F32, widenAll } from '../../../../../test/support/exactChecks.ts';
import { moeExact } from './moeExact.ts';

// The MoE float64 kernels against the CPU reference on the same inputs, the reference within
// a bound of the exact value derived from its roundings (U = 2^-8 per bf16 rounding, u =
// 2^-24 per fp32 step, fp32 library functions within a few u). packages/bench/src/cases/opCases.ts has no
// MoE op, so these are seeded cases of the tiny config's shapes (8 experts, top 2, hidden
// 32, intermediate 16), moeExperts as rank 1 of an EP split (experts 4..7).

const exact = moeExact.perRank!;
const rng = new Rng(303);
const bf = (shape: number[], std = 1): Tensor => rng.bf16Tensor(shape, std);
type MoeOp = 'moeRoute' | 'moeExperts' | 'moeSwiGlu' | 'moeCombine';

function run(op: MoeOp, inputs: Tensor[], attrs: Record<string, unknown> = {}) {
  return { ref: cpuKernel(op)(inputs, attrs) as Tensor[], ex: exact[op]!(widenAll(inputs), attrs) };
}

const T = 19;
const E = 8;
const K = 2;
const H = 32;
const I = 16;
const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

/** Logits [T, E] with some exact ties: row 0 all equal, row 1 a tie for the top, row 2 a tie for the second place. */
function routerLogits(): Tensor {
  const l = bf([T, E], 1.5);
  const d = l.data as Uint16Array;
  d.fill(f32ToBf16(0.5), 0, E);
  d[E + 3] = d[E + 6] = f32ToBf16(4);
  d[2 * E + 1] = f32ToBf16(5);
  d[2 * E + 4] = d[2 * E + 7] = f32ToBf16(4);
  return l;
}

describe('MoE float64 kernels', () => {
  it('moeRoute ties=torch-cpu: exactly equal logits go where torch.topk on the CPU puts them, as in the reference', () => {
    const logits: Tensor = { dtype: 'bf16', shape: [1, 6], data: Uint16Array.from([0, 1, 0, 1, 1, 0], (v) => f32ToBf16(v)) };
    const { ref, ex } = run('moeRoute', [logits], { topK: 2, normTopkProb: true, ties: 'torch-cpu' });
    expect(Array.from(ex[0]!.data)).toEqual([1, 4]);
    expect(Array.from(ref[0].data)).toEqual([1, 4]);
    expect(Array.from(run('moeRoute', [logits], { topK: 2, normTopkProb: true }).ex[0]!.data)).toEqual([1, 3]);
  });

  for (const normTopkProb of [true, false]) {
    it(`moeRoute (normTopkProb ${normTopkProb}): ids equal wherever no near-tie decides, weights within one bf16 rounding`, () => {
      const logits = routerLogits();
      const attrs = { topK: K, normTopkProb };
      const { ref, ex } = run('moeRoute', [logits], attrs);
      const l = f64(widenAll([logits])[0]);
      expect(ex[0]!.dtype).toBe('i32');
      const refIds = ref[0].data as Int32Array;
      const exIds = ex[0]!.data as Int32Array;
      const w = f64(ex[1]);
      // p' = fr(expF32(fr(l - max)) / fp32 sum over E): relative error eps_p = (E + 4 +
      // max|l - max|) u; the renormalization over k adds (k + 1) u and doubles eps_p
      const epsP = new Float64Array(T);
      let decided = 0;
      for (let t = 0; t < T; t++) {
        const row = Array.from(l.subarray(t * E, (t + 1) * E));
        const max = Math.max(...row);
        epsP[t] = (E + 4 + Math.max(...row.map((v) => max - v))) * U_F32;
        const p = row.map((v) => Math.exp(v - max));
        const order = p.map((v, e) => [v, e]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
        // decided: each of the first K + 1 ranked probabilities is exactly equal to the next
        // (equal logits: the same fp32 value on both sides, the tie rule decides alike) or
        // further from it than both sides' errors
        let ok = true;
        for (let k = 0; k < K; k++) {
          const [a, b] = [order[k][0], order[k + 1][0]];
          if (a !== b && a - b <= 2 * epsP[t] * a) ok = false;
        }
        if (!ok) continue;
        decided++;
        expect(Array.from(exIds.subarray(t * K, (t + 1) * K)), `row ${t}`).toEqual(Array.from(refIds.subarray(t * K, (t + 1) * K)));
      }
      expect(decided).toBe(T);
      expect(Array.from(exIds.subarray(0, 2 * K))).toEqual([0, 1, 3, 6]);
      expect(Array.from(exIds.subarray(2 * K, 3 * K))).toEqual([1, 4]);
      expectWithin('moeRoute weights', ref[1], ex[1]!, (i) => {
        const t = Math.floor(i / K);
        const rel = normTopkProb ? 2 * epsP[t] + (K + 1) * U_F32 : epsP[t];
        return roundedOnce(w[i], rel * w[i]);
      });
    });
  }

  it('moeSwiGlu: within two bf16 roundings of silu(gate) * up', () => {
    const gu = bf([T, 2 * I], 2);
    const { ref, ex } = run('moeSwiGlu', [gu]);
    const h = f64(ex[0]);
    const rel = (1 + U_BF16) ** 2 * (1 + 8 * U_F32) - 1;
    expectWithin('moeSwiGlu', ref[0], ex[0]!, (i) => rel * Math.abs(h[i]));
  });

  it('moeCombine: within the roundings of bf(bf(routed) + bf(shared bf(sigmoid(g))))', () => {
    const routed: Tensor = { dtype: 'f32', shape: [T, H], data: Float32Array.from({ length: T * H }, () => Math.fround(rng.normal() * 0.7)) };
    const shared = bf([T, H], 0.5);
    const gl = bf([T, 1], 2);
    const { ref, ex } = run('moeCombine', [routed, shared, gl]);
    const [r, s, g] = widenAll([routed, shared, gl]).map(f64);
    const y = f64(ex[0]);
    const rel2 = (1 + U_BF16) ** 2 * (1 + 8 * U_F32) - 1;
    expectWithin('moeCombine', ref[0], ex[0]!, (i) => {
      const sg = Math.abs(s[i] * sigmoid(g[Math.floor(i / H)]));
      const d = U_BF16 * Math.abs(r[i]) + rel2 * sg;
      return roundedOnce(y[i], d + U_F32 * (Math.abs(r[i]) + sg + d));
    });
  });

  it('moeExperts (rank 1 of an EP split): within the bound carried through gate_up, SwiGLU, down, the weighting and the fp32 sum', () => {
    const x = bf([T, H]);
    const [ids, weights] = cpuKernel('moeRoute')([routerLogits()], { topK: K, normTopkProb: true }) as Tensor[];
    const first = 4;
    const local = 4;
    const gateUp = bf([local * 2 * I, H], 0.2);
    const down = bf([local * H, I], 0.25);
    const attrs = { firstExpert: first, numLocal: local, intermediate: I };
    const { ref, ex } = run('moeExperts', [x, ids, weights, gateUp, down], attrs);
    expect(ex[0]!.dtype).toBe('f32');
    const [xv, wv, gv, dv] = widenAll([x, weights, gateUp, down]).map(f64);
    const idv = ids.data as Int32Array;
    // per routed (t, e): gu = bf(fp32 sum of H exact products): |dgu| <= U (|gu| + H u M) +
    // H u M (M = sum|x w|); act = bf(siluF32(gu')): silu' <= 1.1, siluF32 within 8 u; h =
    // bf(act' up') (a product); o = bf(fp32 sum of I exact products of h' and down): the
    // propagated sum|down| dh plus I u sum|down| |h'|; contribution bf(o' w) (w is the same
    // input on both sides); routed = fp32 sum of the k contributions, f32, no rounding.
    const bound = new Float64Array(T * H);
    for (let t = 0; t < T; t++) {
      let sumAbs = 0;
      const err = new Float64Array(H);
      const mags = new Float64Array(H);
      for (let k = 0; k < K; k++) {
        const e = idv[t * K + k] - first;
        if (e < 0 || e >= local) continue;
        const gu = new Float64Array(2 * I);
        const dgu = new Float64Array(2 * I);
        for (let j = 0; j < 2 * I; j++) {
          let a = 0;
          let m = 0;
          for (let c = 0; c < H; c++) {
            a += xv[t * H + c] * gv[(e * 2 * I + j) * H + c];
            m += Math.abs(xv[t * H + c] * gv[(e * 2 * I + j) * H + c]);
          }
          gu[j] = a;
          dgu[j] = U_BF16 * (Math.abs(a) + H * U_F32 * m) + H * U_F32 * m;
        }
        const h = new Float64Array(I);
        const dh = new Float64Array(I);
        for (let i = 0; i < I; i++) {
          const act = silu(gu[i]);
          const d1 = 1.1 * dgu[i] + 8 * U_F32 * (Math.abs(act) + 1.1 * dgu[i]);
          const dact = U_BF16 * (Math.abs(act) + d1) + d1;
          const up = gu[I + i];
          h[i] = act * up;
          const d2 = Math.abs(act) * dgu[I + i] + Math.abs(up) * dact + dact * dgu[I + i];
          dh[i] = U_BF16 * (Math.abs(h[i]) + d2) + d2;
        }
        const wk = wv[t * K + k];
        for (let j = 0; j < H; j++) {
          let o = 0;
          let d3 = 0;
          let m = 0;
          for (let i = 0; i < I; i++) {
            const wd = dv[(e * H + j) * I + i];
            o += h[i] * wd;
            d3 += Math.abs(wd) * dh[i];
            m += Math.abs(wd) * (Math.abs(h[i]) + dh[i]);
          }
          d3 += I * U_F32 * m;
          const dOut = U_BF16 * (Math.abs(o) + d3) + d3;
          const dc = U_BF16 * Math.abs(wk) * (Math.abs(o) + dOut) + Math.abs(wk) * dOut;
          err[j] += dc;
          mags[j] += Math.abs(o * wk) + dc;
        }
        sumAbs++;
      }
      for (let j = 0; j < H; j++) bound[t * H + j] = err[j] + sumAbs * U_F32 * mags[j];
    }
    // a token with none of its experts here: both sides give exactly 0
    expectWithin('moeExperts', ref[0], ex[0]!, (i) => bound[i]);
  });
});
