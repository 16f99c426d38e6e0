// The fp32 transcendental library of core/numerics/fp32Math.ts in WGSL: same constants (the
// same fp32 values, written as bit patterns so no decimal parsing is involved), same
// operation sequence, same subnormal flush. Every step is a plain WGSL +, -, *, / or sqrt:
// never fma(), dot() or inverseSqrt(), which SwiftShader fuses or approximates
// (numerics.md). Infinities and NaN are made from bits at run time, because a constant
// expression that evaluates to them is a shader-creation error in WGSL.
const fr = Math.fround;
const bitsView = new DataView(new ArrayBuffer(4));

/** A WGSL f32 expression with exactly the fp32 value fround(x). */
function f32Lit(x: number): string {
  bitsView.setFloat32(0, fr(x));
  return `bitcast<f32>(0x${bitsView.getUint32(0).toString(16).padStart(8, '0')}u)`;
}

const SQRT1_2 = fr(0.7071067811865476);

export const FP32_MATH_WGSL = /* wgsl */ `
const LOG2E: f32 = ${f32Lit(1.44269504088896341)};
const LN2_HI: f32 = ${f32Lit(0.693145751953125)};
const LN2_LO: f32 = ${f32Lit(1.428606765330187045e-6)};
const E2: f32 = ${f32Lit(1 / 2)};
const E3: f32 = ${f32Lit(1 / 6)};
const E4: f32 = ${f32Lit(1 / 24)};
const E5: f32 = ${f32Lit(1 / 120)};
const E6: f32 = ${f32Lit(1 / 720)};
const E7: f32 = ${f32Lit(1 / 5040)};
const MIN_NORMAL: f32 = ${f32Lit(1.1754943508222875e-38)};
const EXP_OVERFLOW: f32 = ${f32Lit(88.72283935546875)};
const EXP_UNDERFLOW: f32 = ${f32Lit(-87.33654022216797)};
const LN2: f32 = ${f32Lit(0.6931471805599453)};
const TWO_SQRT1_2: f32 = ${f32Lit(2 * SQRT1_2)};
const L3: f32 = ${f32Lit(2 / 3)};
const L5: f32 = ${f32Lit(2 / 5)};
const L7: f32 = ${f32Lit(2 / 7)};
const L9: f32 = ${f32Lit(2 / 9)};
const L11: f32 = ${f32Lit(2 / 11)};

fn f32_from_bits(b: u32) -> f32 { return bitcast<f32>(b); }
fn is_nan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
// 2^k for k in [-126, 127], exact
fn pow2_f32(k: i32) -> f32 { return bitcast<f32>(u32(k + 127) << 23u); }

fn exp_f32(x: f32) -> f32 {
  if (is_nan_f32(x)) { return x; }
  if (x > EXP_OVERFLOW) { return f32_from_bits(0x7f800000u); }
  if (x < EXP_UNDERFLOW) { return 0.0; }
  let kf = floor(x * LOG2E + 0.5);
  let k = i32(kf);
  let r = (x - kf * LN2_HI) - kf * LN2_LO;
  var p = E7;
  p = p * r + E6;
  p = p * r + E5;
  p = p * r + E4;
  p = p * r + E3;
  p = p * r + E2;
  p = p * r + 1.0;
  p = p * r + 1.0;
  var y: f32;
  if (k > 127) { y = (p * pow2_f32(k - 1)) * 2.0; } else { y = p * pow2_f32(k); }
  if (y < MIN_NORMAL) { return 0.0; }
  return y;
}

fn log_f32(x: f32) -> f32 {
  // sign tested on the bits: SwiftShader treats subnormal inputs as zero (DAZ), so a
  // negative subnormal compares equal to 0 but core's log gives NaN for it
  if (is_nan_f32(x) || bitcast<u32>(x) > 0x80000000u) { return f32_from_bits(0x7fc00000u); }
  if (x < MIN_NORMAL) { return f32_from_bits(0xff800000u); }
  if (bitcast<u32>(x) == 0x7f800000u) { return x; }
  let bits = bitcast<u32>(x);
  var e = i32((bits >> 23u) & 0xffu) - 127;
  var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
  if (m > TWO_SQRT1_2) {
    m = m * 0.5;
    e = e + 1;
  }
  let s = (m - 1.0) / (m + 1.0);
  let s2 = s * s;
  var p = L11;
  p = p * s2 + L9;
  p = p * s2 + L7;
  p = p * s2 + L5;
  p = p * s2 + L3;
  p = p * s2 + 2.0;
  let logm = p * s;
  return f32(e) * LN2 + logm;
}

// GPU contract (numerics.md: results that would be subnormal are flushed): SwiftShader
// flushes subnormal inputs and results (DAZ/FTZ), so rsqrt of a subnormal is +inf and a
// sigmoid below 2^-126 (x < -87.3) is 0; core must flush the same way to stay bit-equal.
fn rsqrt_f32(x: f32) -> f32 { return 1.0 / sqrt(x); }
fn sigmoid_f32(x: f32) -> f32 { return 1.0 / (1.0 + exp_f32(-x)); }
fn silu_f32(x: f32) -> f32 { return x * sigmoid_f32(x); }
fn softplus_f32(x: f32) -> f32 {
  if (x > 20.0) { return x; }
  return log_f32(1.0 + exp_f32(x));
}
`;
