// Argument unpacking shared by the CPU reference kernels and the float64 ones (exact/): attributes,
// input ports and shapes, each with an error naming the op and the bad value.
import type { HeadLayout } from '../../layers/attention/attentionMath.ts';
import { shapeStr, type Tensor } from '../../tensor/tensor.ts';

/** A finite numeric attribute of `op`. */
export function attr(attrs: Record<string, unknown>, name: string, op: string): number {
  const v = attrs[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${op}: attribute '${name}' must be a finite number, got ${String(v)}`);
  return v;
}

/** Input port i of `op`, present and of the given dtype. */
export function input(inputs: (Tensor | null)[], i: number, name: string, op: string, dtype: Tensor['dtype']): Tensor {
  const t = inputs[i];
  if (!t) throw new Error(`${op}: input '${name}' is missing`);
  if (t.dtype !== dtype) throw new Error(`${op}: input '${name}' is ${t.dtype}, expected ${dtype}`);
  return t;
}

/** Rows T of an input that must be [T, cols]. */
export function rows2d(t: { shape: readonly number[] }, name: string, op: string, cols: number): number {
  if (t.shape.length !== 2 || t.shape[1] !== cols) throw new Error(`${op}: input '${name}' is [${t.shape.join(',')}], expected [T,${cols}]`);
  return t.shape[0];
}

/** [rows, cols] of a 2-D tensor; `what` names the op and the port. */
export function dims2(t: { shape: readonly number[] }, what: string): [number, number] {
  if (t.shape.length !== 2) throw new Error(`${what}: expected a 2-D tensor, got ${shapeStr(t.shape)}`);
  return [t.shape[0], t.shape[1]];
}

/** The head layout attributes of `op` (heads of headDim values at `offset` in each head's `stride`). */
export function headLayoutAttrs(attrs: Record<string, unknown>, op: string): HeadLayout {
  return { heads: attr(attrs, 'heads', op), headDim: attr(attrs, 'headDim', op), stride: attr(attrs, 'stride', op), offset: attr(attrs, 'offset', op) };
}

/** RoPE tables cos and sin of `op`, each [rows, half]. */
export function checkRopeTables(op: string, cos: { shape: readonly number[] }, sin: { shape: readonly number[] }, half: number, rows: number): void {
  if (cos.shape.length !== 2 || sin.shape.length !== 2 || cos.shape[1] !== half || sin.shape[1] !== half || cos.shape[0] !== rows || sin.shape[0] !== rows) {
    throw new Error(`${op}: RoPE tables are [${cos.shape.join(',')}]/[${sin.shape.join(',')}], expected [${rows},${half}]`);
  }
}
