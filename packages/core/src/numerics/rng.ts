// Seeded deterministic RNG: xoshiro128** (Blackman & Vigna) on 32-bit integers, seeded by
// splitmix32 (the golden-ratio increment with murmur3's finalizer). Why this design: plain
// 32-bit integer math (Math.imul, shifts) is exact in every JavaScript engine, so Node and
// browsers give the same stream. For the same reason normal() does not call Math.log or
// Math.cos (the spec does not require engines to round those identically): it uses the
// log and cos below, built only from +, -, *, / and sqrt, which IEEE 754 rounds correctly.
import type { Tensor } from '../tensor/tensor.ts';
import { f32ToBf16 } from './bf16.ts';

const TWO_PI = 6.283185307179586;
const TWO_POW_32 = 4294967296;
const LN2 = 0.6931471805599453;
const SQRT2 = 1.4142135623730951;
const f64 = new Float64Array(1);
const hi32 = new Uint32Array(f64.buffer);
// index of the high 32-bit word of a double (exponent and top mantissa bits)
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** Natural log of a finite x > 0, to about 1e-16 relative; only basic IEEE operations. */
function detLog(x: number): number {
  // x = m * 2^e with m in [1, 2), read off the bits (x is never subnormal here: x >= 2^-32)
  f64[0] = x;
  let e = ((hi32[HI] >>> 20) & 0x7ff) - 1023;
  hi32[HI] = (hi32[HI] & 0x800fffff) | 0x3ff00000;
  let m = f64[0];
  if (m > SQRT2) {
    m /= 2;
    e += 1;
  }
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: terms through s^23 leave < 1e-17
  const s = (m - 1) / (m + 1);
  const s2 = s * s;
  let p = 0;
  for (let k = 23; k >= 3; k -= 2) p = (p + 1 / k) * s2;
  return e * LN2 + 2 * s * (1 + p);
}

/** Taylor series for cos and sin on |x| <= pi/4 (terms through x^18 / x^19: < 1e-17). */
function cosSmall(x: number): number {
  const x2 = x * x;
  let p = 0;
  for (let k = 18; k >= 2; k -= 2) p = 1 - (x2 / (k * (k - 1))) * p;
  return p;
}
function sinSmall(x: number): number {
  const x2 = x * x;
  let p = 0;
  for (let k = 19; k >= 3; k -= 2) p = 1 - (x2 / (k * (k - 1))) * p;
  return x * p;
}

/** [cos(2 pi v), sin(2 pi v)] for v in [0, 1), reduced exactly on v itself. */
function detCosSinTurn(v: number): [number, number] {
  const quadrant = Math.floor(v * 4); // 0..3; v*4 is exact
  const r = v - quadrant / 4; // exact, in [0, 1/4)
  // in the quadrant, use the series around 0 or around pi/2 (1/4 - r is exact)
  let c: number;
  let s: number;
  if (r <= 0.125) {
    c = cosSmall(TWO_PI * r);
    s = sinSmall(TWO_PI * r);
  } else {
    const t = TWO_PI * (0.25 - r);
    c = sinSmall(t);
    s = cosSmall(t);
  }
  // rotate by quadrant * 90 degrees
  switch (quadrant) {
    case 0:
      return [c, s];
    case 1:
      return [-s, c];
    case 2:
      return [-c, -s];
    default:
      return [s, -c];
  }
}

function splitmix32(state: { x: number }): number {
  state.x = (state.x + 0x9e3779b9) | 0;
  let z = state.x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  /** Box-Muller makes normals in pairs; the second waits here. */
  private spareNormal: number | null = null;

  /** A generator from a seed: any safe integer >= 0 (both 32-bit halves are used). */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`Rng seed ${seed} must be a safe integer >= 0`);
    const st = { x: (seed >>> 0) ^ Math.imul(Math.floor(seed / TWO_POW_32), 0x632be5ab) };
    this.s0 = splitmix32(st);
    this.s1 = splitmix32(st);
    this.s2 = splitmix32(st);
    this.s3 = splitmix32(st);
  }

  /** A generator with the raw xoshiro128** state (for reference test vectors); not all zero. */
  static fromState(state: readonly [number, number, number, number]): Rng {
    if (state.every((w) => w >>> 0 === 0)) throw new Error('Rng state must not be all zero');
    const r = new Rng(0);
    [r.s0, r.s1, r.s2, r.s3] = state.map((w) => w | 0);
    return r;
  }

  /** Next uniform 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1) on a grid of 2^-32. */
  nextFloat(): number {
    return this.nextU32() / TWO_POW_32;
  }

  /** Standard normal by Box-Muller (pairs; the second value is returned by the next call). */
  normal(): number {
    if (this.spareNormal !== null) {
      const z = this.spareNormal;
      this.spareNormal = null;
      return z;
    }
    const u1 = 1 - this.nextFloat(); // (0, 1]: log is finite
    const u2 = this.nextFloat();
    const radius = Math.sqrt(-2 * detLog(u1));
    const [c, s] = detCosSinTurn(u2);
    this.spareNormal = radius * s;
    return radius * c;
  }

  /** Uniform integer in [lo, hi) (hi exclusive), unbiased by rejection; hi - lo <= 2^32. */
  int(lo: number, hi: number): number {
    if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || hi <= lo || hi - lo > TWO_POW_32) {
      throw new Error(`Rng.int(${lo}, ${hi}): need integers lo < hi with hi - lo <= 2^32`);
    }
    const range = hi - lo;
    // accept u < limit, the largest multiple of range that fits in 2^32
    const limit = TWO_POW_32 - (TWO_POW_32 % range);
    for (;;) {
      const u = this.nextU32();
      if (u < limit) return lo + (u % range);
    }
  }

  /** n values of normal() * std, each rounded (fp32 then bf16, RNE) to bf16 bits. */
  fillBf16Normal(n: number, std: number): Uint16Array {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`fillBf16Normal: count ${n} must be an integer >= 0`);
    if (!Number.isFinite(std) || std < 0) throw new Error(`fillBf16Normal: std ${std} must be a finite number >= 0`);
    const out = new Uint16Array(n);
    for (let i = 0; i < n; i++) out[i] = f32ToBf16(this.normal() * std);
    return out;
  }

  /** A bf16 tensor of this shape holding fillBf16Normal(its element count, std). */
  bf16Tensor(shape: number[], std = 1): Tensor {
    return {
      dtype: 'bf16',
      shape: [...shape],
      data: this.fillBf16Normal(
        shape.reduce((a, d) => a * d, 1),
        std,
      ),
    };
  }
}
