import { describe, expect, it } from 'vitest';
import { Rng } from '../../numerics/rng.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from '../kernels/index.ts';
import { expectWithin, f64, roundedOnce, U_BF16, U_F32, widenAll } from '../../../../../test/support/exactChecks.ts';
import { gdnExact } from './gdnExact.ts';

// The GatedDeltaNet float64 kernels against the CPU reference on the same inputs: the
// reference must lie within a bound of the exact value derived from its own roundings
// (U = 2^-8 per bf16 rounding, u = 2^-24 per fp32 step, fp32 library functions within a few
// u: fp32Math.ts promises 2 ulps for exp and log). The op cases (packages/bench/src/cases/opCases.ts)
// have none of these ops, so these are the same kind of seeded cases on one TP-local rank
// of the tiny config (4 key heads, 12 value heads of 8 at tp 2: 2 and 6).

const exact = gdnExact.perRank!;
const rng = new Rng(77);
const bf = (shape: number[], std = 1): Tensor => rng.bf16Tensor(shape, std);

const T = 19;
const KH = 2;
const VH = 6;
const DK = 8;
const DV = 8;
const C = 2 * KH * DK + VH * DV;
const K = 4;

function run(op: 'gdnConvSilu' | 'gdnGates' | 'gdnRecurrence' | 'gdnGatedNorm', inputs: Tensor[], attrs: Record<string, unknown>) {
  return { ref: cpuKernel(op)(inputs, attrs) as Tensor[], ex: exact[op]!(widenAll(inputs), attrs) };
}

describe('GatedDeltaNet float64 kernels', () => {
  it('gdnConvSilu: within one bf16 rounding of the exact silu(conv), plus the fp32 sum', () => {
    const x = bf([T, C]);
    const w = bf([C, 1, K], 0.5);
    const { ref, ex } = run('gdnConvSilu', [x, w], { kernel: K });
    const xs = f64(widenAll([x])[0]);
    const ws = f64(widenAll([w])[0]);
    const e = f64(ex[0]);
    // ref = bf(siluF32(acc')), acc' the fp32 sum of K exact bf16 products (|acc' - acc| <=
    // K u sum|w x|), silu' <= 1.1, siluF32 within 8 u of silu (exp, add, divide, multiply)
    expectWithin('gdnConvSilu', ref[0], ex[0]!, (i) => {
      const t = Math.floor(i / C);
      const c = i % C;
      let mag = 0;
      for (let j = 0; j < K; j++) if (t - K + 1 + j >= 0) mag += Math.abs(ws[c * K + j] * xs[(t - K + 1 + j) * C + c]);
      return roundedOnce(e[i], 1.1 * K * U_F32 * mag + 8 * U_F32 * Math.abs(e[i]));
    });
  });

  it('gdnGates: g (f32) within the fp32 chain of the exact log-decay, beta within one bf16 rounding', () => {
    const b = bf([T, VH], 2);
    const a = bf([T, VH], 2);
    const aLog = bf([VH]);
    const dt = bf([VH]);
    const { ref, ex } = run('gdnGates', [b, a, aLog, dt], {});
    const [av, aLogv, dtv] = widenAll([a, aLog, dt]).map(f64);
    const g = f64(ex[0]);
    const beta = f64(ex[1]);
    // x = fr(a + dt) (u |x|, through softplus' = sigmoid <= 1), 1 + expF32(x) rounded (u
    // absolute in the log), logF32 2 ulps, expF32(A_log) 2 ulps and the product 1: per
    // element |dg| <= u (A (|x| + 4 + 2 softplus) + 6 |g|), A = exp(A_log)
    expectWithin('gdnGates g', ref[0], ex[0]!, (i) => {
      const h = i % VH;
      const x = av[i] + dtv[h];
      const A = Math.exp(aLogv[h]);
      return U_F32 * (A * (Math.abs(x) + 4 + 2 * Math.abs(g[i] / A)) + 6 * Math.abs(g[i]));
    });
    expectWithin('gdnGates beta', ref[1], ex[1]!, (i) => roundedOnce(beta[i], 8 * U_F32 * beta[i]));
  });

  it('gdnRecurrence: within the bf16 output rounding plus the accumulated fp32 state error', () => {
    const qkv = bf([T, C]);
    const gates = cpuKernel('gdnGates')([bf([T, VH], 2), bf([T, VH], 2), bf([VH], 0.5), bf([VH])], {}) as Tensor[];
    const scale = Math.fround(DK ** -0.5);
    const attrs = { keyHeads: KH, valueHeads: VH, keyDim: DK, valueDim: DV, scale, l2Eps: 1e-6 };
    const { ref, ex } = run('gdnRecurrence', [qkv, gates[0], gates[1]], attrs);
    const [x, beta] = widenAll([qkv, gates[1]]).map(f64);
    const o = f64(ex[0]);
    // ||S_t||_F <= W_t = sum_{tau <= t} beta_tau |v_tau| (|k| <= 1, 0 < beta < 1, decay <= 1:
    // S -> decay (I - beta k k^T) S + beta k v^T does not grow S by more than beta |v|), and
    // the same map does not amplify an earlier error, so the fp32 state error after t + 1
    // steps is at most (t + 1) c u W_t with c = dk dv + 3 dk + 20 per step (the u and update
    // sums of dk terms for each of dv columns, the l2norm of k, exp(g), the products);
    // o_j = S^T q with |q| = scale adds (2 dk + 4) u scale W_t. Then one bf16 rounding.
    const c = DK * DV + 3 * DK + 20;
    const W = new Float64Array(T * VH);
    for (let h = 0; h < VH; h++) {
      let acc = 0;
      for (let t = 0; t < T; t++) {
        let vv = 0;
        for (let j = 0; j < DV; j++) vv += x[t * C + 2 * KH * DK + h * DV + j] ** 2;
        acc += beta[t * VH + h] * Math.sqrt(vv);
        W[t * VH + h] = acc;
      }
    }
    expectWithin('gdnRecurrence', ref[0], ex[0]!, (i) => {
      const t = Math.floor(i / (VH * DV));
      const h = Math.floor((i % (VH * DV)) / DV);
      return roundedOnce(o[i], ((t + 1) * c + 2 * DK + 4) * U_F32 * scale * W[t * VH + h]);
    });
  });

  it('gdnGatedNorm: within three bf16 roundings of the exact gated norm (products only)', () => {
    const o = bf([T, VH * DV]);
    const z = bf([T, VH * DV], 2);
    const w = bf([DV], 0.5);
    const { ref, ex } = run('gdnGatedNorm', [o, z, w], { heads: VH, headDim: DV, eps: 1e-6 });
    const y = f64(ex[0]);
    // bf(bf(bf(o r') w) sigmoid'(z)): a product of factors, each rounding a relative error
    // <= U, r' (sum of dv squares, mean, eps, two rsqrt steps) and sigmoidF32 within
    // (dv + 16) u relative
    const rel = (1 + U_BF16) ** 3 * (1 + (DV + 16) * U_F32) - 1;
    expectWithin('gdnGatedNorm', ref[0], ex[0]!, (i) => rel * Math.abs(y[i]));
  });

  it('output dtypes and shapes are the graph declared ones, values float64', () => {
    const out = exact.gdnGates!(widenAll([bf([3, 2]), bf([3, 2]), bf([2]), bf([2])]), {});
    expect(out.map((t) => [t!.dtype, t!.shape, t!.data.constructor.name])).toEqual([
      ['f32', [3, 2], 'Float64Array'],
      ['bf16', [3, 2], 'Float64Array'],
    ]);
  });
});
