import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { rsqrtF32 } from '../../numerics/fp32Math.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { attnCausal, attnCausalQsa, attnHeadNormRopeBf16, attnOutputGate } from './attentionMath.ts';
import { qsaIndexerDims, qsaIndexerSelect } from './qsaIndexer.ts';
import { qsaKeptCount, qsaKeptPositions, type QsaSelection } from './qsaSelection.ts';
import { ropeTablesBf16 } from './ropeTables.ts';

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
const tiny = getConfig('tiny');
const config = { ...tiny, attention: { ...tiny.attention, numHeads: HEADS, numKvHeads: KV, headDim: HD, ropeDims: ROPE, ropeTheta: 1e4 } };

describe('attentionMath against float64', () => {
  const rng = new Rng(17);

  it('causal softmax attention with GQA: within 1 ulp plus the fp32 accumulation bound', () => {
    const q = rng.fillBf16Normal(T * HEADS * HD, 1);
    const k = rng.fillBf16Normal(T * KV * HD, 1);
    const v = rng.fillBf16Normal(T * KV * HD, 1);
    const scale = Math.fround(HD ** -0.5);
    const o = attnCausal(q, k, v, T, HEADS, KV, HD, scale);
    const [qf, kf, vf] = [q, k, v].map(bf16ArrayToF32);
    let maxV = 0;
    vf.forEach((a) => {
      maxV = Math.max(maxV, Math.abs(a));
    });
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

// attentionExpectations.py, "RoPE case": one 128-dim head (the indexer's), x[d] =
// ((29 d + 11) mod 31 - 15) / 8, w[d] = ((5 d) mod 7 - 3) / 16, eps 1e-6, Flash-Next's RoPE
// (64 dims, theta 1e7) at position 3000, every product and sum rounded to bf16.
const ROPE_3000 = [
  0x3f08, 0x3f10, 0x3fb1, 0x3fbc, 0xbf4d, 0x3fb3, 0xbfa5, 0x3f2a, 0xbfba, 0x3e10, 0x3e92, 0x3f3d, 0x3e22, 0xbe08, 0x3e92, 0x3f19, 0x3e8c, 0xbe08, 0xbf29,
  0xbf7a, 0xbf96, 0xbfc0, 0x3fdb, 0x3fa9, 0x3f79, 0x3f88, 0x3f36, 0x3ed8, 0x3e3b, 0x39aa, 0xbe66, 0xbec9, 0x3f34, 0x3f8a, 0xbd20, 0xbcc0, 0x4010, 0xbff5,
  0x3fc9, 0x3fe2, 0xbf7f, 0x3f9e, 0x3f46, 0xbe58, 0x3eae, 0xbd68, 0x3e97, 0xbec2, 0xbf63, 0xbf88, 0xbfdc, 0xbfda, 0xbfd2, 0x3fe1, 0x3fc2, 0x3f8c, 0x3f3f,
  0x3f45, 0x3ee8, 0x3e4b, 0x39d7, 0xbe75, 0xbed8, 0xbf0c, 0xbf81, 0xbf90, 0xbf97, 0xbfef, 0x3fe5, 0x3faf, 0x3f81, 0x3f92, 0x3f49, 0x3efc, 0x3ecd, 0x3df5,
  0xbdd8, 0xbe8c, 0xbf22, 0xbf49, 0xbf63, 0xbfbc, 0xbfc7, 0xbfca, 0x3fa4, 0x3fc2, 0x3f90, 0x3f49, 0x3f4d, 0x3ef5, 0x3e58, 0x0000, 0xbe81, 0xbee6, 0xbf17,
  0xbf89, 0xbf99, 0xbfa2, 0xbfa4, 0x3ff3, 0x3fbb, 0x3f8a, 0x3f9a, 0x3f56, 0x3f07, 0x3e8c, 0x3e01, 0xbde6, 0xbe97, 0xbf2b, 0xbf56, 0xbf73, 0xbf81, 0xbfd2,
  0xbfd8, 0x3fb0, 0x3fcd, 0x3f99, 0x3f58, 0x3f0c, 0x3f01, 0x3e66, 0x0000, 0xbe89, 0xbef5, 0xbf22, 0xbf3b, 0xbfa2,
];
// dims where bf(fr(n c) -/+ fr(n' s)) (products not rounded) gives another bf16
const ROPE_3000_UNROUNDED_DIFFERS = [4, 7, 9, 10, 13, 17, 21, 34, 35, 41, 43, 45, 54];

describe('attnHeadNormRopeBf16 (HF / ATOM rounding)', () => {
  const flashNext = getConfig('flash-next');
  const HD128 = 128;
  const x = f32ArrayToBf16(Float32Array.from({ length: HD128 }, (_, d) => (((d * 29 + 11) % 31) - 15) / 8));
  const w = f32ArrayToBf16(Float32Array.from({ length: HD128 }, (_, d) => (((d * 5) % 7) - 3) / 16));
  const tables = ropeTablesBf16(flashNext, 3001);
  const cos = tables.cos.data as Uint16Array;
  const sin = tables.sin.data as Uint16Array;
  const head = { heads: 1, headDim: HD128, stride: HD128, offset: 0 };

  it('equals the independently computed head at position 3000, where the bf16 products matter', () => {
    const y = attnHeadNormRopeBf16(x, w, cos, sin, 1, head, 64, 1e-6, { start: 3000, step: 1 });
    expect(Array.from(y)).toEqual(ROPE_3000);
    // the same normed values (y's dims past 64 are them, unrotated; the rotated ones come
    // from an fp32 RMS1p here) and bf16 cos/sin through fp32 products that are not rounded
    const [c, s] = [cos, sin].map((t) => bf16ArrayToF32(t.subarray(3000 * 32, 3001 * 32)));
    const xf = bf16ArrayToF32(x);
    const wf = bf16ArrayToF32(w);
    const fr = Math.fround;
    let ss = 0;
    for (let d = 0; d < HD128; d++) ss = fr(ss + xf[d] * xf[d]);
    const r = rsqrtF32(fr(fr(ss / HD128) + fr(1e-6)));
    const n = Array.from({ length: HD128 }, (_, d) => roundBf16(fr(xf[d] * r) * fr(1 + wf[d])));
    expect(Array.from(y.subarray(64))).toEqual(n.slice(64).map(f32ToBf16));
    const unrounded = n.map((v, d) => (d >= 64 ? v : d < 32 ? fr(fr(v * c[d]) - fr(n[d + 32] * s[d])) : fr(fr(v * c[d - 32]) + fr(n[d - 32] * s[d - 32]))));
    const differs = Array.from(y.keys()).filter((d) => y[d] !== f32ToBf16(unrounded[d]));
    expect(differs).toEqual(ROPE_3000_UNROUNDED_DIFFERS);
  });

  it('reads row r at position start + r * step', () => {
    const rows = 3;
    const xs = new Rng(31).fillBf16Normal(rows * HD128, 1);
    const y = attnHeadNormRopeBf16(xs, w, cos, sin, rows, head, 64, 1e-6, { start: 2992, step: 4 });
    for (let r = 0; r < rows; r++) {
      const one = attnHeadNormRopeBf16(xs.subarray(r * HD128, (r + 1) * HD128), w, cos, sin, 1, head, 64, 1e-6, { start: 2992 + 4 * r, step: 0 });
      expect(y.subarray(r * HD128, (r + 1) * HD128)).toEqual(one);
    }
    expect(() => attnHeadNormRopeBf16(xs, w, cos, sin, rows, head, 64, 1e-6, { start: 2993, step: 4 })).toThrow(
      /position 3001 is past the 3001-position RoPE table/,
    );
  });

  it('q layout with interleaved gate, random heads: within 2 ulps of a float64 chain with the same bf16 rounding points', () => {
    const rng = new Rng(23);
    const stride = 2 * HD;
    const xr = rng.fillBf16Normal(T * HEADS * stride, 1);
    const wr = rng.fillBf16Normal(HD, 0.1);
    const t16 = ropeTablesBf16(config, T);
    const [c16, s16] = [t16.cos.data as Uint16Array, t16.sin.data as Uint16Array];
    const y = attnHeadNormRopeBf16(xr, wr, c16, s16, T, { heads: HEADS, headDim: HD, stride, offset: 0 }, ROPE, 1e-6, { start: 0, step: 1 });
    const [xf, wf, cf, sf] = [xr, wr, c16, s16].map(bf16ArrayToF32);
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
          const [c, s] = [cf[t * half + i], sf[t * half + i]];
          ref[yb + i] = roundBf16(roundBf16(n[i] * c) - roundBf16(n[i + half] * s));
          ref[yb + i + half] = roundBf16(roundBf16(n[i + half] * c) + roundBf16(n[i] * s));
        }
      }
    }
    // only the fp32 norm differs from the float64 one; a flipped normed value can move the
    // rotated one by an ulp
    const report = compareBf16(y, f32ArrayToBf16(ref));
    expect(report.maxUlp).toBeLessThanOrEqual(2);
    expect(report.bitExactFraction).toBeGreaterThan(0.98);
  });
});

describe('attnCausalQsa', () => {
  const small = getConfig('small');
  const d = qsaIndexerDims(small);
  const { numHeads: qh, numKvHeads: kvh, headDim: hd } = small.attention;
  const scale = Math.fround(hd ** -0.5);
  const run = (tokens: number, seed: number) => {
    const rng = new Rng(seed);
    const q = rng.fillBf16Normal(tokens * qh * hd, 1);
    const k = rng.fillBf16Normal(tokens * kvh * hd, 1);
    const v = rng.fillBf16Normal(tokens * kvh * hd, 1);
    const qk = rng.fillBf16Normal(tokens * (d.nHeads + 1) * d.headDim, 1);
    const norms = [rng.fillBf16Normal(d.headDim, 0.1), rng.fillBf16Normal(d.headDim, 0.1)];
    const t16 = ropeTablesBf16(small, tokens);
    const sel = qsaIndexerSelect(qk, norms[0], norms[1], t16.cos.data as Uint16Array, t16.sin.data as Uint16Array, tokens, 0, tokens, d);
    return { q, k, v, sel, dense: attnCausal(q, k, v, tokens, qh, kvh, hd, scale), qsa: attnCausalQsa(q, k, v, tokens, qh, kvh, hd, scale, sel) };
  };

  it("equals dense attention bit for bit up to budget + ratio - 1 = 67 tokens ('small')", () => {
    const r = run(67, 5);
    expect(qsaKeptCount(r.sel, 66)).toBe(67);
    expect(r.qsa).toEqual(r.dense);
  });

  it('differs from dense attention once blocks are dropped, and equals attention over the kept keys', () => {
    const tokens = 90;
    const r = run(tokens, 6);
    const w = qh * hd;
    for (let t = 0; t < tokens; t++) {
      const same = r.qsa.subarray(t * w, (t + 1) * w).every((b, i) => b === r.dense[t * w + i]);
      // rows up to 66 keep every token; from 67 on (68 visible) some are dropped
      if (t < 67) expect(same, `row ${t}`).toBe(true);
      else expect(same, `row ${t}`).toBe(false);
    }
    // row 89: 16 blocks of the 22 complete ones, plus the 2-token tail
    const kept = new Int32Array(tokens);
    const n = qsaKeptPositions(r.sel, 89, kept);
    expect(n).toBe(16 * 4 + 2);
    // gather the kept keys; the last query of a dense pass over them is row 89's QSA output
    const gather = (src: Uint16Array, width: number, rows: ArrayLike<number>) => {
      const out = new Uint16Array(rows.length * width);
      for (let i = 0; i < rows.length; i++) out.set(src.subarray(rows[i] * width, (rows[i] + 1) * width), i * width);
      return out;
    };
    const keys = kept.subarray(0, n);
    const qRows = Array.from({ length: n }, () => 89);
    const compact = attnCausal(gather(r.q, w, qRows), gather(r.k, kvh * hd, keys), gather(r.v, kvh * hd, keys), n, qh, kvh, hd, scale);
    expect(r.qsa.subarray(89 * w, 90 * w)).toEqual(compact.subarray((n - 1) * w, n * w));
  });

  it('Flash-Next keeps every token up to 2051 visible and 2048 + tail beyond', () => {
    const width = 2048 / 4;
    const all = Int32Array.from({ length: 2 * width }, (_, i) => i % width);
    const sel: QsaSelection = { r0: 2050, rows: 2, width, compressRatio: 4, blocks: all };
    expect(qsaKeptCount(sel, 0)).toBe(2051);
    expect(qsaKeptCount(sel, 1)).toBe(2048);
    expect(qsaIndexerDims(getConfig('flash-next')).width).toBe(512);
  });

  it('rejects a selection that does not cover the rows', () => {
    const r = run(20, 7);
    const { q, k, v } = r;
    expect(() => attnCausalQsa(q.subarray(0, 19 * qh * hd), k.subarray(0, 19 * kvh * hd), v.subarray(0, 19 * kvh * hd), 19, qh, kvh, hd, scale, r.sel)).toThrow(
      /covers rows \[0, 20\), expected \[0, 19\)/,
    );
    const bad = { ...r.sel, blocks: r.sel.blocks.map((b, i) => (i === 4 * r.sel.width ? 1 : b)) };
    expect(() => attnCausalQsa(q, k, v, 20, qh, kvh, hd, scale, bad)).toThrow(/row 4 entry 0 is block 1, expected ascending blocks in \[0, 1\)/);
  });
});

describe('attention causality', () => {
  it('rows before t0 are unchanged when q, k, v rows from t0 on change', () => {
    const rng = new Rng(29);
    const t16 = ropeTablesBf16(config, T);
    const [cos, sin] = [t16.cos.data as Uint16Array, t16.sin.data as Uint16Array];
    const qRaw = rng.fillBf16Normal(T * HEADS * 2 * HD, 1);
    const kRaw = rng.fillBf16Normal(T * KV * HD, 1);
    const v = rng.fillBf16Normal(T * KV * HD, 1);
    const wq = rng.fillBf16Normal(HD, 0.1);
    const wk = rng.fillBf16Normal(HD, 0.1);
    const run = (qr: Uint16Array, kr: Uint16Array, vv: Uint16Array) => {
      const at0 = { start: 0, step: 1 };
      const q = attnHeadNormRopeBf16(qr, wq, cos, sin, T, { heads: HEADS, headDim: HD, stride: 2 * HD, offset: 0 }, ROPE, 1e-6, at0);
      const k = attnHeadNormRopeBf16(kr, wk, cos, sin, T, { heads: KV, headDim: HD, stride: HD, offset: 0 }, ROPE, 1e-6, at0);
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
    expect(() => attnHeadNormRopeBf16(z, z, z, z, 1, { heads: 1, headDim: HD, stride: HD, offset: 1 }, ROPE, 1e-6, { start: 0, step: 1 })).toThrow(
      /offset 1 .* overruns stride/,
    );
  });
});

describe('attention reductions in canonical reduction order v1', () => {
  const bf = (n: number, value: (i: number) => number) => Uint16Array.from({ length: n }, (_, i) => f32ToBf16(value(i)));

  it("the head norm's sum of squares: 4096 then ones over headDim 256", () => {
    // x = 4096, then 255 ones; w = 3 * 2^-8, so fl(1 + w) = 1 + 3 * 2^-8 puts x * rstd * (1 + w)
    // on a bf16 tie when rstd is exactly 2^-8. In d order each 1 meets 2^24 alone and is lost
    // (2^24 + 1 ties to the even 2^24): ss 2^24, mean 2^16, rstd 2^-8, and the ties round to
    // even: 4096 -> 16.25, 1 -> 2^-8 * 1.015625. In v1 lane 0 holds 4096^2 and loses its 7 ones,
    // lanes 1-31 hold 8 ones each and the butterfly adds them exactly: ss 2^24 + 248, rstd just
    // below 2^-8, so every product falls just below its tie: 4096 -> 16.125, 1 -> 2^-8 * 1.0078125.
    const hd = 256;
    const x = bf(2 * hd, (d) => (d % hd === 0 ? 4096 : 1));
    const w = bf(hd, () => 3 * 2 ** -8);
    const none = new Uint16Array(0);
    // two heads at stride 256 (the second a copy), no rotation: the normed values themselves
    const got = Array.from(
      attnHeadNormRopeBf16(x, w, none, none, 1, { heads: 2, headDim: hd, stride: hd, offset: 0 }, 0, 1e-6, { start: 0, step: 1 }),
      bf16ToF32,
    );
    const v1 = (d: number) => (d % hd === 0 ? 16.125 : 2 ** -8 * 1.0078125);
    const sequential = (d: number) => (d % hd === 0 ? 16.25 : 2 ** -8 * 1.015625);
    expect(got).toEqual(Array.from({ length: 2 * hd }, (_, d) => v1(d)));
    expect(got.filter((v, d) => v === sequential(d))).toEqual([]);
  });

  it("the softmax's sum l over 512 kept keys: two at the max, 510 tiny ones", () => {
    // headDim 2, scale 1, q = [1, 0]; keys 0 and 1 are [0, 0] (s = 0 = m, p = 1), keys 2.. are
    // [-16, 0] (p = expF32(-16) ~ 1.1254e-7, below half an ulp of 2: 2^-23 ~ 1.1921e-7).
    // v0 = [1, 1], v1 = 3 * 2^-8, the rest 0: acc = 1 + 3 * 2^-8 exactly (the dots and the
    // value sums keep their sequential order). In key order l = 2 and every tiny p is lost,
    // so o = bf(0.5 + 3 * 2^-9), a tie, to even: 0.5 + 2^-7. In v1 lane 0 (keys 0-7) loses its
    // six, but lanes 1.. hold eight tiny p each and the butterfly adds them to l = 2 + ~5.7e-5,
    // so o falls below the tie: 0.5 + 2^-8. Every row t >= 9 shows it (row 8's lane 1 holds one
    // tiny p, lost against 2 in the butterfly too; row 0 is v0 alone).
    const T = 512;
    const hd = 2;
    const q = bf(T * hd, (i) => (i % hd === 0 ? 1 : 0));
    const k = bf(T * hd, (i) => (i >= 2 * hd && i % hd === 0 ? -16 : 0));
    const v = bf(T * hd, (i) => (i < hd ? 1 : i < 2 * hd ? 3 * 2 ** -8 : 0));
    const o = Array.from(attnCausal(q, k, v, T, 1, 1, hd, 1), bf16ToF32);
    const want = (t: number) => (t < 1 ? 1 : t < 9 ? 0.5 + 2 ** -7 : 0.5 + 2 ** -8);
    expect(o).toEqual(Array.from({ length: T * hd }, (_, i) => want(Math.floor(i / hd))));
    // the QSA op with nothing dropped is the same sum
    const width = T / 4;
    const blocks = Int32Array.from({ length: T * width }, (_, i) => {
      const t = Math.floor(i / width);
      const j = i % width;
      return j < Math.floor((t + 1) / 4) ? j : -1;
    });
    const sel: QsaSelection = { blocks, r0: 0, rows: T, width, compressRatio: 4 };
    expect(Array.from(attnCausalQsa(q, k, v, T, 1, 1, hd, 1, sel), bf16ToF32)).toEqual(o);
  });
});
