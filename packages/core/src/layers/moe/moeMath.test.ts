import { describe, expect, it } from 'vitest';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { moeForwardRank, moeRoute, moeSwiGlu, type MoeRankWeightData, type MoeShape } from './moeMath.ts';

// A straightforward float64 MoE with bf16 stores at the same points as moeMath (logits,
// routing weights, gate_up, silu, h, o_e, bf(o_e w), routed, shared path, output): every
// difference from moeMath then comes from fp32 vs fp64 arithmetic inside an op (the fp32
// sums of <= 64 exact products, and expF32/sigmoidF32 within 2 fp32 ulps), which is far
// below half a bf16 ulp (2^-9 relative), so a stored value flips by one ulp only when the
// exact value lies within ~2^-18 relative of a rounding midpoint.
function linear64(x: Float32Array, w: Float32Array, rows: number, inF: number, outF: number): Float32Array {
  const y = new Float32Array(rows * outF);
  for (let t = 0; t < rows; t++) {
    for (let o = 0; o < outF; o++) {
      let acc = 0;
      for (let k = 0; k < inF; k++) acc += x[t * inF + k] * w[o * inF + k];
      y[t * outF + o] = roundBf16(acc);
    }
  }
  return y;
}
const sigmoid64 = (v: number) => 1 / (1 + Math.exp(-v));

function moe64(x: Float32Array, T: number, s: MoeShape, w: Record<keyof MoeRankWeightData, Float32Array | number>): { ids: number[][]; out: Float32Array } {
  const { hidden: H, numExperts: E, topK: K, intermediate: I, sharedIntermediate: Is } = s;
  const f = (k: keyof MoeRankWeightData) => w[k] as Float32Array;
  const logits = linear64(x, f('router'), T, H, E);
  const swiglu = (gu: Float32Array, rows: number, inter: number) => {
    const h = new Float32Array(rows * inter);
    for (let t = 0; t < rows; t++) {
      for (let i = 0; i < inter; i++) {
        const g = gu[t * 2 * inter + i];
        h[t * inter + i] = roundBf16(roundBf16(g * sigmoid64(g)) * gu[t * 2 * inter + inter + i]);
      }
    }
    return h;
  };
  const ids: number[][] = [];
  const out = new Float32Array(T * H);
  const shared = linear64(swiglu(linear64(x, f('sharedGateUp'), T, H, 2 * Is), T, Is), f('sharedDown'), T, Is, H);
  const gl = linear64(x, f('sharedGate'), T, H, 1);
  for (let t = 0; t < T; t++) {
    const row = Array.from(logits.subarray(t * E, (t + 1) * E));
    const m = Math.max(...row);
    const ex = row.map((l) => Math.exp(l - m));
    const sum = ex.reduce((a, b) => a + b, 0);
    const order = ex
      .map((e, i) => [e / sum, i])
      .sort((a, b) => b[0] - a[0] || a[1] - b[1])
      .slice(0, K);
    const norm = order.reduce((a, [p]) => a + p, 0);
    ids.push(order.map(([, e]) => e));
    const routed = new Float64Array(H);
    for (const [p, e] of order) {
      const wk = roundBf16(p / norm);
      const xe = x.subarray(t * H, (t + 1) * H);
      const h = swiglu(linear64(xe, f('expertsGateUp').subarray(e * 2 * I * H, (e + 1) * 2 * I * H), 1, H, 2 * I), 1, I);
      const o = linear64(h, f('expertsDown').subarray(e * H * I, (e + 1) * H * I), 1, I, H);
      for (let j = 0; j < H; j++) routed[j] += roundBf16(o[j] * wk);
    }
    const g = roundBf16(sigmoid64(gl[t]));
    for (let j = 0; j < H; j++) out[t * H + j] = roundBf16(roundBf16(routed[j]) + roundBf16(shared[t * H + j] * g));
  }
  return { ids, out };
}

describe('moeRoute', () => {
  it('breaks probability ties toward the lower expert index and renormalizes', () => {
    // experts 1, 3 and 5 tie at the top; 0 is next
    const logits = f32ArrayToBf16([0.5, 2, -1, 2, -3, 2]);
    const r = moeRoute(logits, 1, 6, 4, true);
    expect([...r.ids]).toEqual([1, 3, 5, 0]);
    const w = [...r.weights].map(bf16ToF32);
    const e2 = Math.exp(2);
    const e05 = Math.exp(0.5);
    expect(w[0]).toBeCloseTo(e2 / (3 * e2 + e05), 2);
    expect(w[3]).toBeCloseTo(e05 / (3 * e2 + e05), 2);
  });

  it('without norm_topk_prob returns the softmax probabilities themselves', () => {
    const logits = f32ArrayToBf16([0, Math.log(3)]);
    const r = moeRoute(logits, 1, 2, 1, false);
    expect([...r.ids]).toEqual([1]);
    expect(bf16ToF32(r.weights[0])).toBe(0.75);
  });

  it('sums the softmax over the experts in canonical reduction order v1 (512 experts)', () => {
    // logits: expert 0 at 0 (p = 1), expert 1 at -2^-8 (p = e = expF32(-2^-8) = 0.99610138),
    // experts 2..511 at -17 (p = expF32(-17) ~ 4.14e-8, below half an ulp of 1: 2^-24 ~ 5.96e-8).
    // In expert order sum = fl(1 + e) and every tiny p is lost, so expert 1's probability is
    // fl(e / (1 + e)) = 0.4990234375, exactly the bf16 tie between 0.498046875 and 0.5: to even,
    // 0.5. In v1 lane 0 (experts 0-7) loses its six, lanes 1-63 hold eight each and the butterfly
    // adds them: sum ~ 1 + e + 2.1e-5, so the probability falls below the tie: 0.498046875.
    // Without renormalization the weights are the probabilities themselves.
    const logits = f32ArrayToBf16(Array.from({ length: 512 }, (_, e) => (e === 0 ? 0 : e === 1 ? -(2 ** -8) : -17)));
    const r = moeRoute(logits, 1, 512, 2, false);
    expect([...r.ids]).toEqual([0, 1]);
    expect([...r.weights].map(bf16ToF32)).toEqual([0.5, 0.498046875]);
  });

  it('rejects a topK outside [1, E] naming it', () => {
    expect(() => moeRoute(new Uint16Array(4), 1, 4, 5, true)).toThrow(/topK 5/);
    expect(() => moeRoute(new Uint16Array(3), 1, 4, 2, true)).toThrow(/router logits has 3 values, expected 4/);
  });
});

describe('moeSwiGlu', () => {
  it('is bf(bf(silu(g)) * u) per element, within 1 ulp of the fp64 silu', () => {
    const rng = new Rng(7);
    const gu = rng.fillBf16Normal(2 * 64 * 2, 2);
    const h = moeSwiGlu(gu, 2, 64);
    const g = bf16ArrayToF32(gu);
    const ref = new Float32Array(128);
    for (let t = 0; t < 2; t++)
      for (let i = 0; i < 64; i++) ref[t * 64 + i] = roundBf16(roundBf16(g[t * 128 + i] * sigmoid64(g[t * 128 + i])) * g[t * 128 + 64 + i]);
    // silu in fp32 is within 2 fp32 ulps, so bf(silu) can flip by one bf16 ulp at a midpoint,
    // and the product rounded again stays within 1 ulp
    expect(compareBf16(h, f32ArrayToBf16(ref)).maxUlp).toBeLessThanOrEqual(1);
  });
});

describe('moeForwardRank (one rank = unsharded MoE)', () => {
  it('matches a float64 re-implementation with the same bf16 stores', () => {
    const s: MoeShape = { hidden: 48, numExperts: 8, topK: 3, intermediate: 16, sharedIntermediate: 16, normTopkProb: true };
    const T = 24;
    const rng = new Rng(2024);
    const { hidden: H, numExperts: E, intermediate: I, sharedIntermediate: Is } = s;
    const w: MoeRankWeightData = {
      router: rng.fillBf16Normal(E * H, 1 / Math.sqrt(H)),
      firstExpert: 0,
      numLocal: E,
      expertsGateUp: rng.fillBf16Normal(E * 2 * I * H, 1 / Math.sqrt(H)),
      expertsDown: rng.fillBf16Normal(E * H * I, 1 / Math.sqrt(I)),
      sharedGateUp: rng.fillBf16Normal(2 * Is * H, 1 / Math.sqrt(H)),
      sharedDown: rng.fillBf16Normal(H * Is, 1 / Math.sqrt(Is)),
      sharedGate: rng.fillBf16Normal(H, 1 / Math.sqrt(H)),
    };
    const x = rng.fillBf16Normal(T * H, 1);
    const got = moeForwardRank(x, T, s, w);
    const dec = Object.fromEntries(Object.entries(w).map(([k, v]) => [k, typeof v === 'number' ? v : bf16ArrayToF32(v)])) as Record<
      keyof MoeRankWeightData,
      Float32Array | number
    >;
    const ref = moe64(bf16ArrayToF32(x), T, s, dec);
    for (let t = 0; t < T; t++) expect([...got.routing.ids.subarray(t * 3, t * 3 + 3)]).toEqual(ref.ids[t]);
    const cmp = compareBf16(got.out, f32ArrayToBf16(ref.out));
    console.info(`moe vs fp64: ${cmp.differing}/${cmp.count} differ, max ${cmp.maxUlp} ulp`);
    // Measured: see the report. A 1-ulp flip in a stored intermediate (h, o_e, a routing
    // weight) moves the output by about one ulp of that term; the output is a sum of up to
    // topK + 1 such terms, so allow 2 ulps and require that almost everything is bit-exact.
    expect(cmp.maxUlp).toBeLessThanOrEqual(2);
    expect(cmp.bitExactFraction).toBeGreaterThan(0.97);
    // the output is in a realistic range, not collapsed
    let ss = 0;
    for (const v of bf16ArrayToF32(got.out)) ss += v * v;
    const rms = Math.sqrt(ss / (T * H));
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(2);
  });
});
