import { describe, expect, it } from 'vitest';
import { pleGatePinned } from '@hcsp/bench/cases';
import { getConfig } from '../../config/presets.ts';
import { resolveWeight } from '../../model/resolveWeight.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { pleNgramIds } from './pleHash.ts';
import { pleConvSilu, pleForward, pleGate, pleGatedValue, pleNgramEmbed, pleRms1pNorm, type PleShape, type PleWeightData } from './pleMath.ts';
import { pleRankWeights, pleShape, pleWeightSpecs } from './pleWeights.ts';

const config = getConfig('small');
const LAYER = 1;
const shape = pleShape(config, LAYER);

async function syntheticWeights(): Promise<PleWeightData> {
  const source = new SyntheticWeightSource(pleWeightSpecs(config, LAYER), 21);
  const refs = pleRankWeights(config, LAYER, 0, 1);
  const entries = await Promise.all(Object.entries(refs).map(async ([k, ref]) => [k, (await resolveWeight(source, ref)).data]));
  return Object.fromEntries(entries) as PleWeightData;
}

// A straightforward float64 PLE with bf16 stores at the reference's points (embedding, key,
// value, the three norms' outputs, each gate product, the score sum, the scaled score, the
// root, the sigmoid, the gated value, conv, silu, out, the new streams). Differences then
// come only from fp32 vs fp64 arithmetic inside an op (fp32 sums of <= 128 terms,
// expF32/sqrt within 2 fp32 ulps), far below half a bf16 ulp, so a stored value flips by
// one ulp only next to a rounding midpoint.
function ple64(x: Float32Array, tokens: Int32Array, s: PleShape, w: PleWeightData): { out: Float64Array; x: Float64Array } {
  const T = tokens.length;
  const { hidden: H, streams: n, embedDim: D, eps } = s;
  const heads = s.vocabSizes.length;
  const hd = D / heads;
  const table = bf16ArrayToF32(w.table);
  const ids = pleNgramIds(tokens, s);
  const e = new Float64Array(T * D);
  for (let t = 0; t < T; t++) for (let h = 0; h < heads; h++) for (let i = 0; i < hd; i++) e[t * D + h * hd + i] = table[ids[t * heads + h] * hd + i];
  const lin = (src: Float64Array, wt: Uint16Array, inF: number, outF: number) => {
    const wf = bf16ArrayToF32(wt);
    const y = new Float64Array(T * outF);
    for (let t = 0; t < T; t++)
      for (let o = 0; o < outF; o++) {
        let acc = 0;
        for (let k = 0; k < inF; k++) acc += src[t * inF + k] * wf[o * inF + k];
        y[t * outF + o] = roundBf16(acc);
      }
    return y;
  };
  const norm = (src: ArrayLike<number>, wt: Uint16Array) => {
    const wf = bf16ArrayToF32(wt);
    const y = new Float64Array(T * n * H);
    for (let r = 0; r < T * n; r++) {
      const b = r * H;
      let ss = 0;
      for (let j = 0; j < H; j++) ss += src[b + j] ** 2;
      const rs = 1 / Math.sqrt(ss / H + eps);
      for (let j = 0; j < H; j++) y[b + j] = roundBf16(src[b + j] * rs * (1 + wf[(r % n) * H + j]));
    }
    return y;
  };
  const key = norm(lin(e, w.keyProj, D, n * H), w.normKey);
  const value = lin(e, w.valueProj, D, H);
  const q = norm(x, w.normQuery);
  const g = new Float64Array(T * n * H);
  for (let r = 0; r < T * n; r++) {
    let dot = 0;
    for (let j = 0; j < H; j++) dot += roundBf16(q[r * H + j] * key[r * H + j]);
    const score = roundBf16(roundBf16(dot) / Math.sqrt(H));
    const root = roundBf16(Math.sqrt(roundBf16(Math.max(Math.abs(score), 1e-6))));
    const gate = roundBf16(1 / (1 + Math.exp(-Math.sign(score) * root)));
    const t = Math.floor(r / n);
    for (let j = 0; j < H; j++) g[r * H + j] = roundBf16(gate * value[t * H + j]);
  }
  const gn = norm(g, w.normConv);
  const cw = bf16ArrayToF32(w.conv);
  const C = n * H;
  const K = s.convKernel;
  const out = new Float64Array(T * C);
  const xo = new Float64Array(T * C);
  for (let t = 0; t < T; t++)
    for (let c = 0; c < C; c++) {
      let acc = 0;
      for (let i = 0; i < K; i++) {
        const src = t - (K - 1 - i) * s.convDilation;
        if (src >= 0) acc += cw[c * K + i] * gn[src * C + c];
      }
      const conv = roundBf16(acc);
      out[t * C + c] = roundBf16(g[t * C + c] + roundBf16(conv / (1 + Math.exp(-conv))));
      xo[t * C + c] = roundBf16(x[t * C + c] + out[t * C + c]);
    }
  return { out, x: xo };
}

/** One bf16 ulp at the magnitude of v. */
function ulpOf(v: number): number {
  const a = Math.abs(v);
  return a < 2 ** -126 ? 2 ** -133 : 2 ** (Math.floor(Math.log2(a)) - 7);
}

const bf = (values: number[]) => f32ArrayToBf16(values);

describe('PLE math', () => {
  it('matches a float64 re-implementation with the same bf16 stores (small config, 48 tokens)', async () => {
    const w = await syntheticWeights();
    const T = 48;
    const rng = new Rng(8);
    const x = rng.fillBf16Normal(T * 4 * config.hiddenSize, 1);
    const tokens = Int32Array.from({ length: T }, (_, t) => (t % 13 === 12 ? config.eosTokenId : rng.int(0, config.vocabSize)));
    const got = pleForward(x, tokens, shape, w);
    const ref = ple64(bf16ArrayToF32(x), tokens, shape, w);
    const cmp = compareBf16(got.out, f32ArrayToBf16(ref.out));
    // out = G + silu(conv) can cancel, so ulps of the result are not the measure (a result
    // near 0 has a tiny ulp). A flipped stored G moves out by 1 ulp of G; a flipped conv
    // value moves silu by |silu'| <= 1.1 ulps of conv, at most ~2 ulps of silu(conv); plus
    // the final rounding: bound |a - e| by 4 ulps of max(|G|, |act|, |out|).
    const gated = bf16ArrayToF32(got.gated);
    const outF = bf16ArrayToF32(got.out);
    let worst = 0;
    for (let i = 0; i < ref.out.length; i++) {
      const scale = Math.max(Math.abs(gated[i]), Math.abs(ref.out[i] - gated[i]), Math.abs(ref.out[i]));
      worst = Math.max(worst, Math.abs(outF[i] - ref.out[i]) / ulpOf(scale));
    }
    console.info(`PLE vs fp64: ${cmp.differing}/${cmp.count} differ (max ${cmp.maxUlp} ulp of the result), worst ${worst} ulps of the largest term`);
    expect(worst).toBeLessThanOrEqual(4);
    expect(cmp.bitExactFraction).toBeGreaterThan(0.99);
    expect(compareBf16(got.x, f32ArrayToBf16(ref.x)).bitExactFraction).toBeGreaterThan(0.99);
    // the synthetic weights put the output in a realistic range, the gates spread
    const rms = Math.sqrt(outF.reduce((a, b) => a + b * b, 0) / outF.length);
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(1);
    const gates = bf16ArrayToF32(got.gate);
    expect(Math.min(...gates)).toBeLessThan(0.4);
    expect(Math.max(...gates)).toBeGreaterThan(0.6);
  });

  it('gathers the rows of the padded table by id (offsets already in the ids)', () => {
    const table = bf([10, 11, 20, 21, 30, 31, 40, 41]); // 4 rows x 2
    expect(Array.from(bf16ArrayToF32(pleNgramEmbed(Int32Array.from([3, 0, 1, 1]), 2, table, 2)))).toEqual([40, 41, 10, 11, 20, 21, 20, 21]);
    expect(() => pleNgramEmbed(Int32Array.from([4, 0]), 2, table, 2)).toThrow(/n-gram id 4 \(position 0, head 0\) is outside the table \[0, 4\)/);
  });

  it('RMS1p scales by (1 + w), one rounding, each stream on its own; a zero group stays zero', () => {
    // Python fp32, run once: rstd = fl(1/fl(sqrt(fl(25/2) + fl(1e-6)))) = 0.28284270; bf(3 rstd * (1+0)) = 0x3f59,
    // bf(4 rstd * (1+0.5)) = 0x3fd9 (both far from a rounding midpoint)
    const y = pleRms1pNorm(bf([3, 4, 0, 0]), 1, 2, 2, bf([0, 0.5, -1, 0.25]), 1e-6);
    expect(Array.from(y)).toEqual([0x3f59, 0x3fd9, 0, 0]);
    // w = -1 gives (1 + w) = 0: a zero output, not x * rstd * w
    expect(Array.from(pleRms1pNorm(bf([3, 4]), 1, 1, 2, bf([-1, -1]), 1e-6))).toEqual([0, 0]);
  });

  it('rounds the gate at every eager bf16 point of the reference, one key per stream', () => {
    // Four streams (H = 3), each row constructed (a Python search with fp32/bf16 emulation, run
    // once) so that dropping one rounding changes the gate, the others left in place:
    //   stream 0: products bf(k*q)        -> 0x3e00 (without: 0x3dfe)
    //   stream 1: the sum bf(sum)         -> 0x3ea1 (without: 0x3ea2)
    //   stream 2: bf(s / sqrt(3)) (and bf of the clamp) -> 0x3f20 (without: 0x3f21)
    //   stream 3: the root bf(sqrt)       -> 0x3f6b (without: 0x3f6c)
    // Each expected sigmoid is more than 2 fp32 ulps from a bf16 rounding midpoint.
    // Row 1: a zero key gives score 0, sign 0, gate sigmoid(0) = 0.5 on every stream.
    const k = [
      [-1.4140625, 0.73046875, 5.90625],
      [-2.03125, 1.046875, 1.828125],
      [-0.45703125, -1.25, 0.578125],
      [0.55078125, -4.75, 3.375],
    ];
    const q = [
      [-1.453125, 0.1572265625, -1.484375],
      [-0.40625, -1.96875, 0.109375],
      [1.25, -0.4921875, 0.72265625],
      [1.1953125, -1.1796875, 1.203125],
    ];
    const keys = bf([...k.flat(), ...new Array(12).fill(0)]);
    const queries = bf([...q.flat(), ...q.flat()]);
    expect(Array.from(pleGate(keys, queries, 2, 4, 3))).toEqual([0x3e00, 0x3ea1, 0x3f20, 0x3f6b, 0x3f00, 0x3f00, 0x3f00, 0x3f00]);
    // stream s uses key s: swapping two streams' keys changes their gates
    const swapped = bf([...k[1], ...k[0], ...k[2], ...k[3]]);
    const g = pleGate(swapped, queries.subarray(0, 12), 1, 4, 3);
    expect(g[0]).not.toBe(0x3e00);
    expect(g[1]).not.toBe(0x3ea1);
  });

  it('gated value: bf(gate * value) per stream, ties to even', () => {
    // 0.314453125 * 1.0078125 = 0.31690979 -> 0.31640625 (0x3ea2); 0.314453125 * -3 = -0.943359375,
    // the midpoint of 0xbf71 and 0xbf72 -> even 0xbf72; gate 0.125 scales exactly
    const gate = Uint16Array.from([0x3ea1, 0x3e00]);
    const value = bf([1.0078125, -3]);
    expect(Array.from(pleGatedValue(gate, value, 1, 2, 2))).toEqual([0x3ea2, 0xbf72, 0x3e01, 0xbec0]);
  });

  it('the dilated conv reads taps t-9, t-6, t-3, t (kernel 4, dilation 3), silu, then adds G', () => {
    const T = 11;
    const C = 2;
    // channel 0: an impulse at t = 0 and weights [0.5, -1, 2, 0.25]: conv[t] is w[3] at t = 0
    // (tap t), w[2] at t = 3 (tap t-3), w[1] at t = 6, w[0] at t = 9, zero elsewhere; G = 0.
    // channel 1: ones everywhere with weights 1: conv[t] = number of taps inside the sequence
    // (1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4); G = 0.5.
    const gn = new Float32Array(T * C);
    const g = new Float32Array(T * C);
    gn[0] = 1;
    for (let t = 0; t < T; t++) {
      gn[t * C + 1] = 1;
      g[t * C + 1] = 0.5;
    }
    const w = bf([0.5, -1, 2, 0.25, 1, 1, 1, 1]);
    const out = pleConvSilu(f32ArrayToBf16(gn), f32ArrayToBf16(g), w, T, C, 4, 3);
    // Python, run once: bf(silu(0.25)) = 0x3e10, bf(silu(2)) = 0x3fe1, bf(silu(-1)) = 0xbe8a,
    // bf(silu(0.5)) = 0x3e9f; bf(0.5 + bf(silu(k))) for k = 1..4: 0x3f9e, 0x4010, 0x4057, 0x408e
    const ch0 = Array.from({ length: T }, (_, t) => out[t * C]);
    expect(ch0).toEqual([0x3e10, 0, 0, 0x3fe1, 0, 0, 0xbe8a, 0, 0, 0x3e9f, 0]);
    const ch1 = Array.from({ length: T }, (_, t) => out[t * C + 1]);
    const sum = [0x3f9e, 0x4010, 0x4057, 0x408e];
    expect(ch1).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4].map((k) => sum[k - 1]));
  });
});

describe('PLE math: the long sums in canonical reduction order v1', () => {
  it('RMS1p: 4096 then ones (groups of 1024) gives the hand-computed v1 outputs, not the sequential ones', () => {
    // As the HC norm's pinned row (hc/combineNorm.test.ts): in j order every 1 is lost against
    // 2^24 (sumsq 2^24, rstd exactly 2^-7) and w = 3 * 2^-8 puts every output on a bf16 tie that
    // rounds to even: 4096 -> 32.5, 1 -> 2^-7 * 1.015625. In v1 lane 0 loses only its 15 ones,
    // sumsq = 2^24 + 1008, rstd falls just below 2^-7 and every output just below its tie:
    // 4096 -> 32.25, 1 -> 2^-7 * 1.0078125.
    const h = 1024;
    const row = Array.from({ length: 2 * h }, (_, j) => (j % h === 0 ? 4096 : 1));
    const y = Array.from(pleRms1pNorm(bf(row), 1, 2, h, bf(new Array(2 * h).fill(3 * 2 ** -8)), 1e-6), bf16ToF32);
    expect(y).toEqual(row.map((v) => (v === 4096 ? 32.25 : 2 ** -7 * 1.0078125)));
  });

  it('the gate: a dot of 2^24, 2558 ones and -2^24 (H 2560) gives the hand-computed v1 gates, not the sequential ones', () => {
    // Stream 0: products 2^24 (j = 0), ones, -2^24 (j = 2559). In j order every 1 is lost against
    // 2^24 and the last term cancels it: sum 0, gate sigmoid(0) = 0.5. In v1 lane 0 (chunks at 0,
    // 512, ..., 2048) loses its 39 ones, lane 63 holds 39 ones then -2^24 (exact: below 2^24 the
    // spacing is 1), the other lanes 40 ones each, and the butterfly adds them all exactly: sum
    // 2519, bf 2512, score bf(2512 / sqrt(2560)) = 49.75, root bf(sqrt(49.75)) = 7.0625,
    // gate bf(sigmoid(7.0625)) = 1. Stream 1 is stream 0 negated (key -1 and -4096 at j = 0):
    // 0.5 in order, bf(sigmoid(-7.0625)) = 224 * 2^-18 in v1.
    const H = 2560;
    const { k, q } = pleGatePinned(H);
    expect(Array.from(pleGate(bf(k), bf(q), 1, 2, H), bf16ToF32)).toEqual([1, 224 * 2 ** -18]);
  });
});
