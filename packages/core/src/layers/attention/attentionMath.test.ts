import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { attnCausal, attnHeadNormRope, attnOutputGate } from './attentionMath.ts';
import { ropeTables } from './ropeTables.ts';

// Each op against a float64 re-implementation with the same bf16 rounding points. A bf16
// result can differ from the float64 chain by 1 ulp per rounding point, where the fp32
// error (a few 2^-24) lands the value on the other side of a rounding boundary.

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
function ulpOf(v: number): number {
  if (v === 0) return 2 ** -133;
  return 2 ** (Math.floor(Math.log2(Math.abs(v))) - 7);
}

const T = 20;
const HEADS = 4;
const KV = 2;
const HD = 16;
const ROPE = 8;
const config = { ...getConfig('tiny'), attention: { numHeads: HEADS, numKvHeads: KV, headDim: HD, ropeDims: ROPE, ropeTheta: 1e4 } };

describe('ropeTables', () => {
  it('matches float64 cos/sin of fp32 angles, position 0 is the identity', () => {
    const { cos, sin } = ropeTables(config, T);
    const half = ROPE / 2;
    expect(cos.shape).toEqual([T, half]);
    const c = cos.data as Float32Array;
    const s = sin.data as Float32Array;
    for (let i = 0; i < half; i++) {
      expect(c[i]).toBe(1);
      expect(s[i]).toBe(0);
    }
    for (let pos = 0; pos < T; pos++) {
      for (let i = 0; i < half; i++) {
        const angle = pos * 1e4 ** (-(2 * i) / ROPE);
        // fp32 inv_freq and angle: relative error <= 2 * 2^-24 of the angle
        const tol = 2 * 2 ** -24 * angle + 2 ** -24;
        expect(Math.abs(c[pos * half + i] - Math.cos(angle))).toBeLessThanOrEqual(tol);
        expect(Math.abs(s[pos * half + i] - Math.sin(angle))).toBeLessThanOrEqual(tol);
      }
    }
    expect(() => ropeTables(config, 0)).toThrow(/tokens must be a positive integer, got 0/);
  });
});

describe('attentionMath against float64', () => {
  const rng = new Rng(17);
  const { cos, sin } = ropeTables(config, T);
  const cf = cos.data as Float32Array;
  const sf = sin.data as Float32Array;

  it('head norm + RoPE (q layout with interleaved gate): two rounding points, within 2 ulps', () => {
    const stride = 2 * HD;
    const x = rng.fillBf16Normal(T * HEADS * stride, 1);
    const w = rng.fillBf16Normal(HD, 0.1);
    const y = attnHeadNormRope(x, w, cf, sf, T, { heads: HEADS, headDim: HD, stride, offset: 0 }, ROPE, 1e-6);
    const xf = bf16ArrayToF32(x);
    const wf = bf16ArrayToF32(w);
    const half = ROPE / 2;
    const ref = new Float64Array(T * HEADS * HD);
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < HEADS; h++) {
        const xb = (t * HEADS + h) * stride;
        let ss = 0;
        for (let d = 0; d < HD; d++) ss += xf[xb + d] ** 2;
        const r = 1 / Math.sqrt(ss / HD + 1e-6);
        const n = Array.from({ length: HD }, (_, d) => roundBf16(xf[xb + d] * r * (1 + wf[d])));
        const yb = (t * HEADS + h) * HD;
        for (let d = 0; d < HD; d++) ref[yb + d] = n[d];
        for (let i = 0; i < half; i++) {
          const c = cf[t * half + i];
          const s = sf[t * half + i];
          ref[yb + i] = roundBf16(n[i] * c - n[i + half] * s);
          ref[yb + i + half] = roundBf16(n[i + half] * c + n[i] * s);
        }
      }
    }
    const report = compareBf16(y, f32ArrayToBf16(ref));
    expect(report.maxUlp).toBeLessThanOrEqual(2);
    expect(report.bitExactFraction).toBeGreaterThan(0.98);
  });

  it('causal softmax attention with GQA: within 1 ulp plus the fp32 accumulation bound', () => {
    const q = rng.fillBf16Normal(T * HEADS * HD, 1);
    const k = rng.fillBf16Normal(T * KV * HD, 1);
    const v = rng.fillBf16Normal(T * KV * HD, 1);
    const scale = Math.fround(HD ** -0.5);
    const o = attnCausal(q, k, v, T, HEADS, KV, HD, scale);
    const [qf, kf, vf] = [q, k, v].map(bf16ArrayToF32);
    let maxV = 0;
    vf.forEach((a) => (maxV = Math.max(maxV, Math.abs(a))));
    // the fp32 sums over at most T keys carry < 2 T 2^-24 of max|v|; 2^-16 max|v| covers it
    const atol = 2 ** -16 * maxV;
    let beyondOneUlp = 0;
    for (let h = 0; h < HEADS; h++) {
      const kvh = Math.floor(h / (HEADS / KV));
      for (let t = 0; t < T; t++) {
        const s = Array.from({ length: t + 1 }, (_, j) => {
          let dot = 0;
          for (let d = 0; d < HD; d++) dot += qf[(t * HEADS + h) * HD + d] * kf[(j * KV + kvh) * HD + d];
          return dot * scale;
        });
        const m = Math.max(...s);
        const p = s.map((x) => Math.exp(x - m));
        const l = p.reduce((a, b) => a + b, 0);
        for (let d = 0; d < HD; d++) {
          let acc = 0;
          for (let j = 0; j <= t; j++) acc += p[j] * vf[(j * KV + kvh) * HD + d];
          const e = acc / l;
          const err = Math.abs(bf16ToF32(o[(t * HEADS + h) * HD + d]) - e);
          expect(err).toBeLessThanOrEqual(ulpOf(e) + atol);
          if (err > ulpOf(e)) beyondOneUlp++;
        }
      }
    }
    expect(beyondOneUlp).toBeLessThanOrEqual(2);
  });

  it('output gate: bf(o * bf(sigmoid(gate))), within 2 ulps of the float64 chain', () => {
    const o = rng.fillBf16Normal(T * HEADS * HD, 1);
    const qg = rng.fillBf16Normal(T * HEADS * 2 * HD, 2);
    const y = attnOutputGate(o, qg, T, HEADS, HD);
    const of = bf16ArrayToF32(o);
    const gf = bf16ArrayToF32(qg);
    const ref = new Float64Array(o.length);
    for (let th = 0; th < T * HEADS; th++) {
      for (let d = 0; d < HD; d++) ref[th * HD + d] = roundBf16(of[th * HD + d] * roundBf16(sigmoid(gf[th * 2 * HD + HD + d])));
    }
    const report = compareBf16(y, f32ArrayToBf16(ref));
    expect(report.maxUlp).toBeLessThanOrEqual(2);
    expect(report.bitExactFraction).toBeGreaterThan(0.99);
  });
});

describe('attention causality', () => {
  it('rows before t0 are unchanged when q, k, v rows from t0 on change', () => {
    const rng = new Rng(29);
    const { cos, sin } = ropeTables(config, T);
    const qRaw = rng.fillBf16Normal(T * HEADS * 2 * HD, 1);
    const kRaw = rng.fillBf16Normal(T * KV * HD, 1);
    const v = rng.fillBf16Normal(T * KV * HD, 1);
    const wq = rng.fillBf16Normal(HD, 0.1);
    const wk = rng.fillBf16Normal(HD, 0.1);
    const run = (qr: Uint16Array, kr: Uint16Array, vv: Uint16Array) => {
      const q = attnHeadNormRope(qr, wq, cos.data as Float32Array, sin.data as Float32Array, T, { heads: HEADS, headDim: HD, stride: 2 * HD, offset: 0 }, ROPE, 1e-6);
      const k = attnHeadNormRope(kr, wk, cos.data as Float32Array, sin.data as Float32Array, T, { heads: KV, headDim: HD, stride: HD, offset: 0 }, ROPE, 1e-6);
      return attnOutputGate(attnCausal(q, k, vv, T, HEADS, KV, HD, Math.fround(HD ** -0.5)), qr, T, HEADS, HD);
    };
    const t0 = 9;
    const perturb = (a: Uint16Array, width: number) => {
      const out = a.slice();
      out.set(rng.fillBf16Normal((T - t0) * width, 1), t0 * width);
      return out;
    };
    const base = run(qRaw, kRaw, v);
    const changed = run(perturb(qRaw, HEADS * 2 * HD), perturb(kRaw, KV * HD), perturb(v, KV * HD));
    const w = HEADS * HD;
    expect(changed.subarray(0, t0 * w)).toEqual(base.subarray(0, t0 * w));
    expect(compareBf16(changed.subarray(t0 * w), base.subarray(t0 * w)).differing).toBeGreaterThan(0);
  });

  it('rejects bad sizes and layouts, naming them', () => {
    const z = new Uint16Array(0);
    expect(() => attnCausal(z, z, z, 1, 3, 2, HD, 0.25)).toThrow(/heads 3 are not a multiple of KV heads 2/);
    expect(() => attnCausal(new Uint16Array(7), z, z, 1, HEADS, KV, HD, 0.25)).toThrow(/q has 7 values/);
    expect(() => attnHeadNormRope(z, z, new Float32Array(0), new Float32Array(0), 1, { heads: 1, headDim: HD, stride: HD, offset: 1 }, ROPE, 1e-6)).toThrow(/offset 1 .* overruns stride/);
  });
});
