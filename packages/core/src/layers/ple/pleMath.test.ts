import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { resolveWeight } from '../../model/resolveWeight.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { bf16ArrayToF32, f32ArrayToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { pleNgramIds } from './pleHash.ts';
import { pleForward, pleGate, pleRmsNorm, type PleShape, type PleWeightData } from './pleMath.ts';
import { pleRankWeights, pleShape, pleWeightSpecs } from './pleWeights.ts';

const config = getConfig('small');
const LAYER = 1;
const shape = pleShape(config);
const source = new SyntheticWeightSource(pleWeightSpecs(config, LAYER), 21);
const refs = pleRankWeights(config, LAYER, 0, 1);
const weights = Object.fromEntries(Object.entries(refs).map(([k, ref]) => [k, resolveWeight(source, ref).data])) as unknown as PleWeightData;

// A straightforward float64 PLE with bf16 stores at the same points as pleMath (embedding,
// key, value, the three norms' outputs, the gated value, conv, silu, out); the gate stays
// unrounded as in pleMath. Differences then come only from fp32 vs fp64 arithmetic inside
// an op (fp32 sums of <= 128 exact products, expF32/sqrt within 2 fp32 ulps), far below
// half a bf16 ulp, so a stored value flips by one ulp only next to a rounding midpoint.
function ple64(x: Float32Array, tokens: Int32Array, s: PleShape, w: PleWeightData): Float32Array {
  const T = tokens.length;
  const { hidden: H, streams: n, embedDim: D, eps } = s;
  const heads = s.vocabSizes.length;
  const hd = D / heads;
  const tables = bf16ArrayToF32(w.tables);
  const ids = pleNgramIds(tokens, s);
  const e = new Float64Array(T * D);
  for (let t = 0; t < T; t++) {
    let off = 0;
    for (let j = 0; j < heads; j++) {
      for (let i = 0; i < hd; i++) e[t * D + j * hd + i] = tables[(off + ids[t * heads + j]) * hd + i];
      off += s.vocabSizes[j];
    }
  }
  const lin = (src: Float64Array, wt: Uint16Array, inF: number, outF: number) => {
    const wf = bf16ArrayToF32(wt);
    const y = new Float64Array(T * outF);
    for (let t = 0; t < T; t++) for (let o = 0; o < outF; o++) {
      let acc = 0;
      for (let k = 0; k < inF; k++) acc += src[t * inF + k] * wf[o * inF + k];
      y[t * outF + o] = roundBf16(acc);
    }
    return y;
  };
  const norm = (src: ArrayLike<number>, groups: number, wt: Uint16Array) => {
    const wf = bf16ArrayToF32(wt);
    const y = new Float64Array(T * groups * H);
    for (let t = 0; t < T; t++) for (let g = 0; g < groups; g++) {
      const b = (t * groups + g) * H;
      let ss = 0;
      for (let j = 0; j < H; j++) ss += src[b + j] ** 2;
      const r = 1 / Math.sqrt(ss / H + eps);
      for (let j = 0; j < H; j++) y[b + j] = roundBf16(src[b + j] * r * wf[g * H + j]);
    }
    return y;
  };
  const key = norm(lin(e, w.keyProj, D, H), 1, w.keyNorm);
  const value = lin(e, w.valueProj, D, H);
  const q = norm(x, n, w.queryNorm);
  const g = new Float64Array(T * n * H);
  for (let t = 0; t < T; t++) for (let st = 0; st < n; st++) {
    let dot = 0;
    for (let j = 0; j < H; j++) dot += q[(t * n + st) * H + j] * key[t * H + j];
    const score = dot / Math.sqrt(H);
    const gate = 1 / (1 + Math.exp(-Math.sign(score) * Math.sqrt(Math.max(Math.abs(score), 1e-6))));
    for (let j = 0; j < H; j++) g[(t * n + st) * H + j] = roundBf16(gate * value[t * H + j]);
  }
  const gn = norm(g, n, w.outNorm);
  const cw = bf16ArrayToF32(w.conv);
  const C = n * H;
  const K = s.convKernel;
  const out = new Float32Array(T * C);
  for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) {
    let acc = 0;
    for (let i = 0; i < K; i++) {
      const src = t - (K - 1 - i) * s.convDilation;
      if (src >= 0) acc += cw[c * K + i] * gn[src * C + c];
    }
    const conv = roundBf16(acc);
    out[t * C + c] = roundBf16(g[t * C + c] + roundBf16(conv / (1 + Math.exp(-conv))));
  }
  return out;
}

/** One bf16 ulp at the magnitude of v. */
function ulpOf(v: number): number {
  const a = Math.abs(v);
  return a < 2 ** -126 ? 2 ** -133 : 2 ** (Math.floor(Math.log2(a)) - 7);
}

describe('PLE math', () => {
  const T = 48;
  const rng = new Rng(8);
  const x = rng.fillBf16Normal(T * 4 * config.hiddenSize, 1);
  const tokens = Int32Array.from({ length: T }, () => rng.int(0, config.vocabSize));

  it('matches a float64 re-implementation with the same bf16 stores', () => {
    const got = pleForward(x, tokens, shape, weights);
    const ref = ple64(bf16ArrayToF32(x), tokens, shape, weights);
    const cmp = compareBf16(got.out, f32ArrayToBf16(ref));
    // out = G + silu(conv) can cancel, so ulps of the result are not the measure (a result
    // near 0 has a tiny ulp). A flipped stored G moves out by 1 ulp of G; a flipped conv
    // value moves silu by |silu'| <= 1.1 ulps of conv, which is at most ~2 ulps of
    // act = silu(conv) (for conv < 0, |silu'| shrinks faster than |silu|/|conv|); plus the
    // final rounding: bound |a - e| by 4 ulps of max(|G|, |act|, |out|).
    const gated = bf16ArrayToF32(got.gated);
    const outF = bf16ArrayToF32(got.out);
    let worst = 0;
    for (let i = 0; i < ref.length; i++) {
      const scale = Math.max(Math.abs(gated[i]), Math.abs(ref[i] - gated[i]), Math.abs(ref[i]));
      worst = Math.max(worst, Math.abs(outF[i] - ref[i]) / ulpOf(scale));
    }
    console.info(`PLE vs fp64: ${cmp.differing}/${cmp.count} differ (max ${cmp.maxUlp} ulp of the result), worst ${worst} ulps of the largest term`);
    expect(worst).toBeLessThanOrEqual(4);
    expect(cmp.bitExactFraction).toBeGreaterThan(0.99);
    // the synthetic weights put the output in a realistic range
    const v = bf16ArrayToF32(got.out);
    const rms = Math.sqrt(v.reduce((a, b) => a + b * b, 0) / v.length);
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(1);
    // the gates are spread, not saturated
    expect(Math.min(...got.gate)).toBeLessThan(0.4);
    expect(Math.max(...got.gate)).toBeGreaterThan(0.6);
  });

  it('signed square root: a zero score gives gate 0.5, tiny scores are floored at 1e-6', () => {
    const H = 4;
    const q = f32ArrayToBf16([1, 1, 1, 1, 1, 1, 1, 1]);
    const zero = f32ArrayToBf16([0, 0, 0, 0]);
    expect(pleGate(q.subarray(0, 4), zero, 1, 1, H)[0]).toBe(0.5);
    // score = (1e-8 * 4) / 2 = 2e-8 -> sqrt(1e-6) = 1e-3 -> sigmoid slightly above 0.5
    const tiny = f32ArrayToBf16([1e-8, 1e-8, 1e-8, 1e-8]);
    const g = pleGate(q.subarray(0, 4), tiny, 1, 1, H)[0];
    expect(g).toBeCloseTo(1 / (1 + Math.exp(-1e-3)), 6);
    const neg = f32ArrayToBf16([-4, -4, -4, -4]); // score = -16 / 2 = -8 -> -sqrt(8)
    expect(pleGate(q.subarray(0, 4), neg, 1, 1, H)[0]).toBeCloseTo(1 / (1 + Math.exp(Math.sqrt(8))), 6);
  });

  it('grouped RMS norm normalizes each stream on its own; a zero row stays zero', () => {
    const H = 3;
    const xs = f32ArrayToBf16([3, 0, 4, 0, 0, 0]);
    const y = bf16ArrayToF32(pleRmsNorm(xs, 1, 2, H, f32ArrayToBf16([1, 1, 1, 2, 2, 2]), 1e-6));
    const r = 1 / Math.sqrt(25 / 3);
    expect(y[0]).toBeCloseTo(3 * r, 2);
    expect(y[2]).toBeCloseTo(4 * r, 2);
    expect([...y.subarray(3)]).toEqual([0, 0, 0]);
  });
});
