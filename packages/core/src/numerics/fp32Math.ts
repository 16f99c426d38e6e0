// fp32 transcendental functions built only from correctly rounded fp32 +, -, *, / and sqrt,
// each step rounded with Math.fround. Why: Math.exp is a double function and a GPU's exp is
// an approximation of its own, so neither can be mirrored bit for bit on another backend;
// these can. The WGSL kernels use the same constants and the same operation sequence
// (kernels-wgsl/src/wgsl/fp32Math.wgsl.ts), which is what makes cpu and webgpu bit-identical.
// Subnormals are flushed to zero, inputs and results, as GPUs do (SwiftShader treats
// subnormal inputs as zero and flushes subnormal results); both sides do it explicitly so
// FTZ hardware and IEEE hardware agree. Accuracy: within 2 fp32 ulps of the
// true value on normal results (checked in fp32Math.test.ts).
const fr = Math.fround;

const LOG2E = fr(1.44269504088896341);
// ln2 split so that k * LN2_HI is exact for |k| < 2^8 (LN2_HI has 16 significant bits).
const LN2_HI = fr(0.693145751953125);
const LN2_LO = fr(1.428606765330187045e-6);
// Taylor coefficients 1/k! for k = 2..7 (fp32): |r| <= ln2/2, truncation error < 2^-29.
const E2 = fr(1 / 2);
const E3 = fr(1 / 6);
const E4 = fr(1 / 24);
const E5 = fr(1 / 120);
const E6 = fr(1 / 720);
const E7 = fr(1 / 5040);
const MIN_NORMAL = 1.1754943508222875e-38;
const EXP_OVERFLOW = fr(88.72283935546875);
const EXP_UNDERFLOW = fr(-87.33654022216797);

const scratchF = new Float32Array(1);
const scratchU = new Uint32Array(scratchF.buffer);

/** 2^k as an fp32 for k in [-126, 127], built from its bits (exact). */
function pow2(k: number): number {
  scratchU[0] = (k + 127) << 23;
  return scratchF[0];
}

export function expF32(xIn: number): number {
  const x = fr(xIn);
  if (x !== x) return x;
  if (x > EXP_OVERFLOW) return Infinity;
  if (x < EXP_UNDERFLOW) return 0;
  const k = Math.floor(fr(fr(x * LOG2E) + 0.5));
  const r = fr(fr(x - fr(k * LN2_HI)) - fr(k * LN2_LO));
  let p = E7;
  p = fr(fr(p * r) + E6);
  p = fr(fr(p * r) + E5);
  p = fr(fr(p * r) + E4);
  p = fr(fr(p * r) + E3);
  p = fr(fr(p * r) + E2);
  p = fr(fr(p * r) + 1);
  p = fr(fr(p * r) + 1);
  // k is in [-126, 128]: split 2^128 so the scale itself never overflows.
  const y = k > 127 ? fr(fr(p * pow2(k - 1)) * 2) : fr(p * pow2(k));
  return y < MIN_NORMAL ? 0 : y;
}

// log: x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1).
const LN2 = fr(0.6931471805599453);
const SQRT1_2 = fr(0.7071067811865476);
// 2/(2k+1) for the atanh series: s^2 <= 0.0295, so terms through s^11 leave < 2^-30.
const L3 = fr(2 / 3);
const L5 = fr(2 / 5);
const L7 = fr(2 / 7);
const L9 = fr(2 / 9);
const L11 = fr(2 / 11);

export function logF32(xIn: number): number {
  const x = fr(xIn);
  if (x !== x || x < 0) return NaN;
  if (x < MIN_NORMAL) return -Infinity;
  if (x === Infinity) return Infinity;
  scratchF[0] = x;
  const bits = scratchU[0];
  let e = ((bits >>> 23) & 0xff) - 127;
  scratchU[0] = (bits & 0x007fffff) | 0x3f800000;
  let m = scratchF[0];
  if (m > fr(2 * SQRT1_2)) {
    m = fr(m * 0.5);
    e += 1;
  }
  const s = fr(fr(m - 1) / fr(m + 1));
  const s2 = fr(s * s);
  let p = L11;
  p = fr(fr(p * s2) + L9);
  p = fr(fr(p * s2) + L7);
  p = fr(fr(p * s2) + L5);
  p = fr(fr(p * s2) + L3);
  p = fr(fr(p * s2) + 2);
  const logm = fr(p * s);
  return fr(fr(e * LN2) + logm);
}

/** x with subnormal magnitudes replaced by a zero of the same sign (flush to zero). */
export function ftz(x: number): number {
  return Math.abs(x) < MIN_NORMAL ? (Object.is(x, -0) || x < 0 ? -0 : 0) : x;
}

export function sqrtF32(x: number): number {
  return fr(Math.sqrt(ftz(fr(x))));
}

/** 1 / sqrt(x), two correctly rounded steps (not a hardware rsqrt approximation). */
export function rsqrtF32(x: number): number {
  return fr(1 / fr(Math.sqrt(ftz(fr(x)))));
}

export function sigmoidF32(x: number): number {
  return ftz(fr(1 / fr(1 + expF32(-x))));
}

export function siluF32(x: number): number {
  const xf = ftz(fr(x));
  return ftz(fr(xf * sigmoidF32(xf)));
}

/** softplus(x) = log(1 + exp(x)); above 20 it equals x in fp32 (as torch's threshold). */
export function softplusF32(x: number): number {
  const xf = fr(x);
  if (xf > 20) return xf;
  return logF32(fr(1 + expF32(xf)));
}
