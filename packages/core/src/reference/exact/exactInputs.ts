import type { ExactTensor } from './exactTensor.ts';

// The input and attribute checks of the float64 kernels that take their ports by index
// (attentionExact.ts, gdnExact.ts, moeExact.ts, pleExact.ts): each names the op and the port
// or attribute it refuses.

/** A floating input's shape and float64 values. */
export interface F64Input {
  shape: readonly number[];
  data: Float64Array;
}

/** Input port i of `op` as float64 values, present and floating. */
export function floatInput(inputs: (ExactTensor | null)[], i: number, name: string, op: string): F64Input {
  const t = inputs[i];
  if (!t) throw new Error(`${op}: input '${name}' is missing`);
  if (!(t.data instanceof Float64Array)) throw new Error(`${op}: input '${name}' is ${t.dtype} with integer data, expected floating values`);
  return { shape: t.shape, data: t.data };
}

/** Input port i of `op` as int32 values, present and i32. */
export function intInput(inputs: (ExactTensor | null)[], i: number, name: string, op: string): { shape: readonly number[]; data: Int32Array } {
  const t = inputs[i];
  if (!t) throw new Error(`${op}: input '${name}' is missing`);
  if (!(t.data instanceof Int32Array)) throw new Error(`${op}: input '${name}' is ${t.dtype}, expected i32`);
  return { shape: t.shape, data: t.data };
}

/** A finite number attribute of `op`. */
export function numAttr(attrs: Record<string, unknown>, name: string, op: string): number {
  const v = attrs[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${op}: attribute '${name}' must be a finite number, got ${String(v)}`);
  return v;
}

/** The rows T of a [T, cols] input (anything else is refused). */
export function rows2d(t: { shape: readonly number[] }, name: string, op: string, cols: number): number {
  if (t.shape.length !== 2 || t.shape[1] !== cols) throw new Error(`${op}: input '${name}' is [${t.shape.join(',')}], expected [T,${cols}]`);
  return t.shape[0];
}

/** The two dimensions of a 2-D tensor. */
export function dims2(t: { shape: readonly number[] }, what: string): [number, number] {
  if (t.shape.length !== 2) throw new Error(`${what}: expected a 2-D tensor, got [${t.shape.join(',')}]`);
  return [t.shape[0], t.shape[1]];
}
