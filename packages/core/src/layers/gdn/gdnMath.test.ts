import { describe, expect, it } from 'vitest';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { GDN_L2NORM_EPS, gdnConvSilu, gdnGatedNorm, gdnGates, gdnQkvChannels, gdnRecurrence, type GdnHeads } from './gdnMath.ts';

// Each op against a straightforward float64 re-implementation with the same bf16 rounding
// points (bf applied to float64 values). Where the fp32 result and the float64 value round
// to different bf16 neighbours, the float64 value lies within the fp32 error of a rounding
// boundary: 1 ulp per rounding point the error can cross.

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const silu = (x: number) => x * sigmoid(x);
const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));

function ulpOf(v: number): number {
  // bf16 ulp of |v| (8 significant bits)
  if (v === 0) return 2 ** -133;
  return 2 ** (Math.floor(Math.log2(Math.abs(v))) - 7);
}

const HEADS: GdnHeads = { keyHeads: 2, valueHeads: 6, keyDim: 16, valueDim: 8 };
const T = 24;
const K = 4;

function randomInputs(seed: number) {
  const rng = new Rng(seed);
  const C = gdnQkvChannels(HEADS);
  const vh = HEADS.valueHeads;
  return {
    x: rng.fillBf16Normal(T * C, 1),
    convW: rng.fillBf16Normal(C * K, 0.5),
    b: rng.fillBf16Normal(T * vh, 1),
    a: rng.fillBf16Normal(T * vh, 1),
    aLog: rng.fillBf16Normal(vh, 0.5),
    dtBias: rng.fillBf16Normal(vh, 0.5),
    z: rng.fillBf16Normal(T * vh * HEADS.valueDim, 1),
    // a plain weight near 1, as the checkpoint's norm.weight
    normW: f32ArrayToBf16(Array.from({ length: HEADS.valueDim }, () => 1 + 0.1 * rng.normal())),
  };
}

function conv64(x: Uint16Array, w: Uint16Array, C: number): Float64Array {
  const xf = bf16ArrayToF32(x);
  const wf = bf16ArrayToF32(w);
  const y = new Float64Array(T * C);
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < C; c++) {
      let acc = 0;
      for (let j = 0; j < K; j++) {
        const src = t - K + 1 + j;
        if (src >= 0) acc += wf[c * K + j] * xf[src * C + c];
      }
      y[t * C + c] = roundBf16(silu(acc));
    }
  }
  return y;
}

function recurrence64(qkv: Uint16Array, g: Float32Array, beta: Uint16Array, scale: number): Float64Array {
  const { keyHeads: kh, valueHeads: vh, keyDim: dk, valueDim: dv } = HEADS;
  const C = gdnQkvChannels(HEADS);
  const x = bf16ArrayToF32(qkv);
  const S = new Float64Array(vh * dk * dv);
  const o = new Float64Array(T * vh * dv);
  const norm = (off: number) => {
    let ss = 0;
    for (let i = 0; i < dk; i++) ss += x[off + i] ** 2;
    const r = 1 / Math.sqrt(ss + GDN_L2NORM_EPS);
    return Array.from({ length: dk }, (_, i) => x[off + i] * r);
  };
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < vh; h++) {
      const khead = Math.floor(h / (vh / kh));
      const q = norm(t * C + khead * dk).map((v) => v * scale);
      const k = norm(t * C + kh * dk + khead * dk);
      const v = Array.from({ length: dv }, (_, j) => x[t * C + 2 * kh * dk + h * dv + j]);
      const decay = Math.exp(g[t * vh + h]);
      const b = bf16ToF32(beta[t * vh + h]);
      const s = (i: number, j: number) => h * dk * dv + i * dv + j;
      for (let i = 0; i < dk * dv; i++) S[h * dk * dv + i] *= decay;
      for (let j = 0; j < dv; j++) {
        let u = 0;
        for (let i = 0; i < dk; i++) u += S[s(i, j)] * k[i];
        const d = b * (v[j] - u);
        for (let i = 0; i < dk; i++) S[s(i, j)] += k[i] * d;
      }
      for (let j = 0; j < dv; j++) {
        let acc = 0;
        for (let i = 0; i < dk; i++) acc += S[s(i, j)] * q[i];
        o[(t * vh + h) * dv + j] = acc;
      }
    }
  }
  return o;
}

/** Ulp distances of bf16 results from float64 values, in ulps of the float64 value. */
function ulpErrors(actual: Uint16Array, expected: Float64Array): number[] {
  return Array.from(actual, (a, i) => Math.abs(bf16ToF32(a) - expected[i]) / ulpOf(expected[i]));
}

describe('gdnMath against float64', () => {
  const inp = randomInputs(11);
  const C = gdnQkvChannels(HEADS);

  it('conv + silu: one rounding, within 1 ulp, mostly exact', () => {
    const y = gdnConvSilu(inp.x, inp.convW, T, C, K);
    const ref = conv64(inp.x, inp.convW, C);
    const errs = ulpErrors(y, ref);
    const exact = errs.filter((e) => e === 0).length;
    expect(Math.max(...errs)).toBeLessThanOrEqual(1);
    expect(exact / errs.length).toBeGreaterThan(0.99);
  });

  // g's fp32 error: a few fp32 ulps from exp, log and the product; the rounding of a + dt
  // (2^-24 relative) grows by softplus's condition number (<= 1 + |x|); and log(fr(1 + e^x))
  // loses the rounding of 1 + e^x, an absolute 2^-24 error before the * exp(A_log).
  it('gates: g within its fp32 error bound, beta one rounding', () => {
    const vh = HEADS.valueHeads;
    const { g, beta } = gdnGates(inp.b, inp.a, inp.aLog, inp.dtBias, T, vh);
    const af = bf16ArrayToF32(inp.a);
    const bf = bf16ArrayToF32(inp.b);
    for (let i = 0; i < T * vh; i++) {
      const h = i % vh;
      const A = Math.exp(bf16ToF32(inp.aLog[h]));
      const x = af[i] + bf16ToF32(inp.dtBias[h]);
      const g64 = -A * softplus(x);
      expect(Math.abs(g[i] - g64)).toBeLessThanOrEqual(2 ** -23 * ((4 + Math.abs(x)) * Math.abs(g64) + A));
      expect(g[i]).toBeLessThan(0);
      const b64 = roundBf16(sigmoid(bf[i]));
      expect(Math.abs(bf16ToF32(beta[i]) - sigmoid(bf[i]))).toBeLessThanOrEqual(ulpOf(b64));
    }
  });

  it('recurrence: o within 1 ulp + the fp32 state error bound', () => {
    const conv = gdnConvSilu(inp.x, inp.convW, T, C, K);
    const { g, beta } = gdnGates(inp.b, inp.a, inp.aLog, inp.dtBias, T, HEADS.valueHeads);
    const scale = Math.fround(HEADS.keyDim ** -0.5);
    const { o } = gdnRecurrence(conv, g, beta, T, HEADS, scale, GDN_L2NORM_EPS);
    const ref = recurrence64(conv, g, beta, scale);
    // The fp32 state carries rounding errors of ~2^-24 relative per update; over T steps
    // and dk-term sums they stay below 2^-14 of the output magnitude (|S^T q| <= ~1 here),
    // so an element may also miss by that absolute amount when o itself is small.
    const maxAbs = Math.max(...ref.map(Math.abs));
    const atol = 2 ** -14 * maxAbs;
    let beyondOneUlp = 0;
    ref.forEach((e, i) => {
      const err = Math.abs(bf16ToF32(o[i]) - e);
      expect(err).toBeLessThanOrEqual(ulpOf(e) + atol);
      if (err > ulpOf(e)) beyondOneUlp++;
    });
    expect(beyondOneUlp).toBeLessThanOrEqual(2);
    expect(maxAbs).toBeGreaterThan(0.05);
  });

  it('gated norm: three rounding points, within 2 ulps of the float64 chain', () => {
    const rng = new Rng(5);
    const n = T * HEADS.valueHeads * HEADS.valueDim;
    const o = rng.fillBf16Normal(n, 0.3);
    const y = gdnGatedNorm(o, inp.z, inp.normW, T, HEADS.valueHeads, HEADS.valueDim, 1e-6);
    const of = bf16ArrayToF32(o);
    const zf = bf16ArrayToF32(inp.z);
    const wf = bf16ArrayToF32(inp.normW);
    const dv = HEADS.valueDim;
    const ref = new Float64Array(n);
    for (let base = 0; base < n; base += dv) {
      let ss = 0;
      for (let j = 0; j < dv; j++) ss += of[base + j] ** 2;
      const r = 1 / Math.sqrt(ss / dv + 1e-6);
      for (let j = 0; j < dv; j++) ref[base + j] = roundBf16(roundBf16(roundBf16(of[base + j] * r) * wf[j]) * sigmoid(zf[base + j]));
    }
    const report = compareBf16(y, f32ArrayToBf16(ref)); // ref holds bf16 values: exact
    expect(report.maxUlp).toBeLessThanOrEqual(2);
    expect(report.bitExactFraction).toBeGreaterThan(0.98);
  });
});

describe('gdnMath causality and carried state', () => {
  const inp = randomInputs(23);
  const C = gdnQkvChannels(HEADS);
  const vh = HEADS.valueHeads;
  const scale = Math.fround(HEADS.keyDim ** -0.5);
  const run = (x: Uint16Array, b: Uint16Array, a: Uint16Array) => {
    const conv = gdnConvSilu(x, inp.convW, T, C, K);
    const { g, beta } = gdnGates(b, a, inp.aLog, inp.dtBias, T, vh);
    return gdnRecurrence(conv, g, beta, T, HEADS, scale, GDN_L2NORM_EPS).o;
  };

  it('output rows before t0 do not change when rows from t0 on change', () => {
    const t0 = 13;
    const base = run(inp.x, inp.b, inp.a);
    const rng = new Rng(99);
    const perturb = (arr: Uint16Array, width: number) => {
      const out = arr.slice();
      out.set(rng.fillBf16Normal((T - t0) * width, 1), t0 * width);
      return out;
    };
    const changed = run(perturb(inp.x, C), perturb(inp.b, vh), perturb(inp.a, vh));
    const w = vh * HEADS.valueDim;
    expect(changed.subarray(0, t0 * w)).toEqual(base.subarray(0, t0 * w));
    expect(compareBf16(changed.subarray(t0 * w), base.subarray(t0 * w)).differing).toBeGreaterThan(0);
  });

  it('token-by-token with carried conv history and state equals the whole prefill, bit for bit', () => {
    const whole = run(inp.x, inp.b, inp.a);
    const { g, beta } = gdnGates(inp.b, inp.a, inp.aLog, inp.dtBias, T, vh);
    const w = vh * HEADS.valueDim;
    let history = new Uint16Array((K - 1) * C);
    let state: Float32Array | undefined;
    for (let t = 0; t < T; t++) {
      const row = inp.x.subarray(t * C, (t + 1) * C);
      const conv = gdnConvSilu(row, inp.convW, 1, C, K, history);
      const step = gdnRecurrence(conv, g.subarray(t * vh, (t + 1) * vh), beta.subarray(t * vh, (t + 1) * vh), 1, HEADS, scale, GDN_L2NORM_EPS, state);
      state = step.state;
      expect(step.o).toEqual(whole.subarray(t * w, (t + 1) * w));
      const next = new Uint16Array((K - 1) * C);
      next.set(history.subarray(C));
      next.set(row, (K - 2) * C);
      history = next;
    }
  });

  it('rejects inputs of the wrong size, naming them', () => {
    expect(() => gdnConvSilu(inp.x.subarray(1), inp.convW, T, C, K)).toThrow(/conv input has/);
    expect(() => gdnRecurrence(new Uint16Array(5), new Float32Array(T * vh), new Uint16Array(T * vh), T, HEADS, scale, 1e-6)).toThrow(/qkv has 5 values/);
    expect(() => gdnRecurrence(new Uint16Array(0), new Float32Array(0), new Uint16Array(0), 0, { ...HEADS, valueHeads: 5 }, scale, 1e-6)).toThrow(
      /value heads 5/,
    );
  });
});

describe('gdnMath: the sums of squares in canonical reduction order v1', () => {
  const bf = (values: number[]) => f32ArrayToBf16(Float32Array.from(values));

  it('the l2 norm of k: 4096 then 127 ones (keyDim 128) gives the hand-computed v1 outputs, not the sequential ones', () => {
    // k = [4096, 1 x 127]: in i order each 1 meets 2^24 alone and is lost (2^24 + 1 ties to the
    // even 2^24), so sumsq = 2^24 and k's norm is exactly 1 at i = 0. In v1 lanes 0-15 own the 16
    // chunks: lane 0 loses its 7 ones, lanes 1-15 keep 8 each and the butterfly adds them exactly:
    // sumsq = 2^24 + 120, r just below 2^-12, k_0 = 1 - 60 * 2^-24.
    // q = [4096, 0 ...] normalizes to exactly [1, 0 ...] either way; g = 0 (decay 1), beta 1.5 and
    // v = [1 + 2^-7, 1 + 5 * 2^-7], so from the zero state o_j = bf(k_0 * 1.5 * v_j) where 1.5 v_j
    // is a bf16 tie (1.51171875, 1.55859375): with k_0 = 1 it rounds to even (1.515625, 1.5625),
    // with k_0 just below 1 it rounds down (1.5078125, 1.5546875).
    const dk = 128;
    const q = [4096, ...new Array(dk - 1).fill(0)];
    const k = [4096, ...new Array(dk - 1).fill(1)];
    const qkv = bf([...q, ...k, 1 + 2 ** -7, 1 + 5 * 2 ** -7]);
    const { o } = gdnRecurrence(qkv, new Float32Array([0]), bf([1.5]), 1, { keyHeads: 1, valueHeads: 1, keyDim: dk, valueDim: 2 }, 1, GDN_L2NORM_EPS);
    expect(Array.from(o, bf16ToF32)).toEqual([1.5078125, 1.5546875]);
    // k = [4096, 0 ...] normalizes to exactly [1, 0 ...] in any order: the ties round to even, as the sequential sum's k does
    const inLane0 = bf([...q, 4096, ...new Array(dk - 1).fill(0), 1 + 2 ** -7, 1 + 5 * 2 ** -7]);
    const exact = gdnRecurrence(inLane0, new Float32Array([0]), bf([1.5]), 1, { keyHeads: 1, valueHeads: 1, keyDim: dk, valueDim: 2 }, 1, GDN_L2NORM_EPS);
    expect(Array.from(exact.o, bf16ToF32)).toEqual([1.515625, 1.5625]);
  });

  it('the gated norm: 4096 then 2^18 - 1 ones gives the hand-computed v1 outputs, not the sequential ones', () => {
    // headDim 2^18. In j order every 1 is lost against 2^24: sumsq 2^24, mean 2^6, r = 1/8 exactly,
    // so with w = 1 and z = 0 (sigmoid 0.5): y = [4096 / 8 / 2, 1 / 8 / 2] = [256, 0.0625].
    // In v1 lane 0 loses its 4095 ones and lanes 1-63 keep 4096 each: sumsq 2^24 + 258048,
    // mean 64.984375, r = 0.12406... (0.76% below 1/8, more than a bf16 half ulp):
    // bf(4096 r) = 508 (508.18), bf(r) = 0.1240234375 (2 ulps below 1/8), halved by the gate.
    const hd = 2 ** 18;
    const o = bf([4096, ...new Array(hd - 1).fill(1)]);
    const y = gdnGatedNorm(o, new Uint16Array(hd), bf(new Array(hd).fill(1)), 1, 1, hd, 1e-6);
    expect(bf16ToF32(y[0])).toBe(254);
    expect(new Set(Array.from(y.subarray(1), bf16ToF32))).toEqual(new Set([0.06201171875]));
  });
});
