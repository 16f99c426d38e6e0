import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { bf16ArrayToF32, bf16ToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { moeForwardRank, type MoeRankResult, type MoeShape } from './moeMath.ts';
import { moeRankReference } from '../../../../../test/support/moeRankReference.ts';
import { moeRankWeights, moeWeightSpecs } from './moeWeights.ts';

const config = getConfig('small');
const LAYER = 2;
const T = 1100; // a sequence-parallel sized prefill (SP shards above 1024 rows)
const source = new SyntheticWeightSource(moeWeightSpecs(config, LAYER), 11);
const x = new Rng(5).fillBf16Normal(T * config.hiddenSize, 1);

function runRank(rank: number, tp: number): MoeRankResult {
  return moeRankReference(config, LAYER, source, x, T, rank, tp);
}

/** Half an ulp of a bf16 value v (the largest error of rounding something to v). */
function halfUlp(v: number): number {
  const a = Math.abs(v);
  if (a < 2 ** -126) return 2 ** -134;
  return 2 ** (Math.floor(Math.log2(a)) - 8);
}

describe('MoE under TP/EP', () => {
  const full = runRank(0, 1);

  it('sums over tp ranks to the unsharded MoE within the rounding of the partials', () => {
    const H = config.hiddenSize;
    for (const tp of [2, 4]) {
      const ranks = Array.from({ length: tp }, (_, r) => runRank(r, tp));
      // one-shot reduction: fp32 sum in rank order, one rounding (numerics.md)
      const summed = new Uint16Array(T * H);
      let worstRatio = 0;
      let worstPartialUlps = 0;
      for (let i = 0; i < T * H; i++) {
        let acc = 0;
        for (const r of ranks) acc = Math.fround(acc + bf16ToF32(r.out[i]));
        summed[i] = f32ToBf16(acc);
        // Element-wise bound: both results approximate the same exact value
        //   sum over chosen experts of bf(o_e w) + g * (exact shared dot product)
        // (routing, h and every bf(o_e w) are bit-identical on every split). Each side is
        // off by at most half an ulp of every value it rounds: unsharded R = bf(routed),
        // shared, S = bf(shared g), out; sharded per rank R_r, shared_r, S_r, partial_r,
        // and the final rounding. The fp32 sums (<= 32 exact products or topK terms) add
        // at most 2^-19 of their absolute sums: covered by 1/16 of a half ulp of the
        // largest term here (the terms are O(1) and the sums do not cancel 100-fold).
        const t = Math.floor(i / H);
        const g = roundBf16(1 / (1 + Math.exp(-bf16ToF32(full.sharedGateLogit[t]))));
        const sideBound = (r: MoeRankResult) =>
          halfUlp(roundBf16(r.routed[i])) + g * halfUlp(bf16ToF32(r.shared[i])) + halfUlp(roundBf16(bf16ToF32(r.shared[i]) * g)) + halfUlp(bf16ToF32(r.out[i]));
        let bound = sideBound(full) + halfUlp(bf16ToF32(summed[i]));
        let largest = Math.abs(full.routed[i]) + Math.abs(bf16ToF32(full.shared[i]));
        for (const r of ranks) {
          bound += sideBound(r);
          largest = Math.max(largest, Math.abs(r.routed[i]) + Math.abs(bf16ToF32(r.shared[i])));
        }
        bound += halfUlp(largest) / 16;
        const diff = Math.abs(bf16ToF32(summed[i]) - bf16ToF32(full.out[i]));
        worstRatio = Math.max(worstRatio, diff / bound);
        const termScale = (r: MoeRankResult) => Math.max(Math.abs(r.routed[i]), Math.abs(bf16ToF32(r.shared[i])), Math.abs(bf16ToF32(r.out[i])));
        let scale = termScale(full);
        for (const r of ranks) scale = Math.max(scale, termScale(r));
        worstPartialUlps = Math.max(worstPartialUlps, diff / (2 * halfUlp(scale)));
      }
      const cmp = compareBf16(summed, full.out);
      console.info(
        `MoE tp=${tp}: ${cmp.differing}/${cmp.count} elements differ from tp=1 (bit-exact ${(cmp.bitExactFraction * 100).toFixed(2)}%), max ${cmp.maxUlp} ulp, worst diff/bound ${worstRatio.toFixed(3)}, worst diff in ulps of the largest rounded term ${worstPartialUlps}`,
      );
      expect(worstRatio).toBeLessThanOrEqual(1);
      // the routing is replicated: every rank chose the same experts with the same weights
      for (const r of ranks) {
        expect(r.routing.ids).toEqual(full.routing.ids);
        expect(r.routing.weights).toEqual(full.routing.weights);
      }
      // In ulps of the result the difference is unbounded where the ranks' partials cancel
      // (a result near 0 has a tiny ulp; the max-ulp above is such an element, a sign flip
      // around zero). Measured against the largest value rounded on either side (routed
      // sums, shared outputs, partials), the bound above is at most (4 + 4 tp + 1) half
      // ulps of it plus slack: assert 2 tp + 3 ulps.
      expect(worstPartialUlps).toBeLessThanOrEqual(2 * tp + 3);
    }
  });

  it('routes tokens across every expert (the sharded test exercises every rank)', () => {
    const counts = new Array(config.moe.numExperts).fill(0);
    for (const e of full.routing.ids) counts[e]++;
    expect(Math.min(...counts)).toBeGreaterThan(0);
  });

  it('is causal per token: changing rows after t leaves rows up to t unchanged', () => {
    const H = config.hiddenSize;
    const t = 40;
    const small = 64;
    const shape: MoeShape = { hidden: H, ...config.moe, sharedIntermediate: config.moe.sharedIntermediate };
    const refs = moeRankWeights(config, LAYER, 0, 1);
    const get = (k: keyof typeof refs) => source.resolve(refs[k]).data as Uint16Array;
    const w = {
      router: get('router'),
      firstExpert: 0,
      numLocal: config.moe.numExperts,
      expertsGateUp: get('expertsGateUp'),
      expertsDown: get('expertsDown'),
      sharedGateUp: get('sharedGateUp'),
      sharedDown: get('sharedDown'),
      sharedGate: get('sharedGate'),
    };
    const xa = x.slice(0, small * H);
    const xb = xa.slice();
    xb.set(new Rng(99).fillBf16Normal((small - t - 1) * H, 1), (t + 1) * H);
    const a = moeForwardRank(xa, small, shape, w).out;
    const b = moeForwardRank(xb, small, shape, w).out;
    expect(b.subarray(0, (t + 1) * H)).toEqual(a.subarray(0, (t + 1) * H));
    expect(b.subarray((t + 1) * H)).not.toEqual(a.subarray((t + 1) * H));
    // and the rows of a shorter prefill equal the first rows of the long one
    expect(moeForwardRank(x.subarray(0, small * H), small, shape, w).out).toEqual(full.out.subarray(0, small * H));
    expect(bf16ArrayToF32(a).some((v) => v !== 0)).toBe(true);
  });
});
