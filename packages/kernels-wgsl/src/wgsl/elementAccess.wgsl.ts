// WGSL accessors for one element of a bound buffer in the packed layout (kernelProgram.ts):
// bf16 elements are 16-bit halves of u32 words, 32-bit dtypes are whole words. Generated
// per buffer because WGSL functions cannot take a storage-buffer pointer portably.

export function isPacked16(dtype: string): boolean {
  if (dtype === 'bf16') return true;
  if (dtype === 'f32' || dtype === 'i32') return false;
  throw new Error(`kernels-wgsl: dtype '${dtype}' has no element accessor`);
}

/** fn <buf>_bits(i: u32) -> u32: the raw bits of element i (16 or 32 bits). */
export function elementBits(buf: string, dtype: string): string {
  return isPacked16(dtype)
    ? `fn ${buf}_bits(i: u32) -> u32 { return (${buf}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu; }`
    : `fn ${buf}_bits(i: u32) -> u32 { return ${buf}[i]; }`;
}

/** fn <buf>_f32(i: u32) -> f32 (or `fn <fnName>(i: u32) -> f32`): the exact fp32 value of bf16 element i. */
export function bf16Element(buf: string, fnName = `${buf}_f32`): string {
  return `fn ${fnName}(i: u32) -> f32 { return bitcast<f32>(((${buf}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu) << 16u); }`;
}
