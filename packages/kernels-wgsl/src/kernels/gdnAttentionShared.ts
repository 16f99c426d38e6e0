// Pieces shared by the GatedDeltaNet and full-attention planners: reading one bf16 element
// of a packed buffer in WGSL, f32 values as uniform words, and the shape/attribute checks.
import type { TensorInfo } from '../kernelProgram.ts';
import { requireDtype, requireTensor } from './planParts.ts';

/**
 * WGSL `fn name(i: u32) -> f32`: element i of the packed bf16 storage array `buffer`
 * (low half of word i >> 1 when i is even). Needs BF16_WGSL in the same module.
 */
export function bf16ElementFn(name: string, buffer: string): string {
  return `fn ${name}(i: u32) -> f32 {
  let w = ${buffer}[i >> 1u];
  if ((i & 1u) == 0u) { return bf16_lo(w); }
  return bf16_hi(w);
}`;
}

/** WGSL `fn round_bf16(x: f32) -> f32`: bf(x) as a value, as core's roundBf16. Needs BF16_WGSL. */
export const ROUND_BF16_WGSL = `fn round_bf16(x: f32) -> f32 { return bf16_bits_to_f32(f32_to_bf16(x)); }`;

const bitsView = new DataView(new ArrayBuffer(4));

/** The bit pattern of fround(x), for an f32 carried in a u32 uniform word (read with bitcast<f32>). */
export function f32Bits(x: number): number {
  bitsView.setFloat32(0, x);
  return bitsView.getUint32(0);
}

/** A finite numeric attribute, or a clear error naming it. */
export function requireFloatAttr(attrs: Record<string, unknown>, name: string, op: string): number {
  const v = attrs[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${op}: attribute ${name} = ${String(v)} is not a finite number`);
  return v;
}

/** A port tensor of the given dtype and exact shape, or a clear error naming what differs. */
export function requirePort(t: TensorInfo | null | undefined, what: string, dtype: string, shape: readonly number[]): TensorInfo {
  const info = requireTensor(t, what);
  requireDtype(info, [dtype], what);
  if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
    throw new Error(`${what} is [${info.shape.join(',')}], expected [${shape.join(',')}]`);
  }
  return info;
}

/** Rows T of a 2-D tensor [T, cols] of the given dtype, or a clear error. */
export function requireRows(t: TensorInfo | null | undefined, what: string, dtype: string, cols: number): number {
  const info = requireTensor(t, what);
  requireDtype(info, [dtype], what);
  if (info.shape.length !== 2 || info.shape[1] !== cols) throw new Error(`${what} is [${info.shape.join(',')}], expected [T,${cols}]`);
  return info.shape[0];
}
