// bf16 in WGSL: there is no bf16 type (and no shader-f16 on SwiftShader), so values live two
// per u32 word (element 2i in the low half) and are rounded with integer operations exactly
// as core/numerics/bf16.ts does: RNE on the fp32 bits, NaN -> 0x7FC0.
export const BF16_WGSL = /* wgsl */ `
fn bf16_lo(w: u32) -> f32 { return bitcast<f32>(w << 16u); }
fn bf16_hi(w: u32) -> f32 { return bitcast<f32>(w & 0xffff0000u); }
fn bf16_bits_to_f32(b: u32) -> f32 { return bitcast<f32>(b << 16u); }
fn f32_to_bf16(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return 0x7fc0u; }
  return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
fn pack_bf16(lo: f32, hi: f32) -> u32 { return f32_to_bf16(lo) | (f32_to_bf16(hi) << 16u); }
`;

/** WGSL `fn rbf(v: f32) -> f32`: bf(v) as a value, as core's roundBf16. Needs BF16_WGSL. */
export const ROUND_BF16_WGSL = /* wgsl */ `fn rbf(v: f32) -> f32 { return bitcast<f32>(f32_to_bf16(v) << 16u); }`;
