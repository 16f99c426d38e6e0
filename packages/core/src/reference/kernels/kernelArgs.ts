// Argument unpacking shared by the CPU reference kernels: attributes, input ports and 2-D
// shapes, each with an error naming the op and the bad value.
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
export function rows2d(t: Tensor, name: string, op: string, cols: number): number {
  if (t.shape.length !== 2 || t.shape[1] !== cols) throw new Error(`${op}: input '${name}' is [${t.shape.join(',')}], expected [T,${cols}]`);
  return t.shape[0];
}

/** [rows, cols] of a 2-D tensor; `what` names the op and the port. */
export function dims2(t: Tensor, what: string): [number, number] {
  if (t.shape.length !== 2) throw new Error(`${what}: expected a 2-D tensor, got ${shapeStr(t.shape)}`);
  return [t.shape[0], t.shape[1]];
}
