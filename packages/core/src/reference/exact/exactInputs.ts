import type { ExactTensor } from './exactTensor.ts';

export { attr as numAttr, checkRopeTables, dims2, headLayoutAttrs, rows2d } from '../kernels/kernelArgs.ts';

// The input and attribute checks of the float64 kernels that take their ports by index
// (attentionExact.ts, gdnExact.ts, moeExact.ts, pleExact.ts): each names the op and the port
// or attribute it refuses. The ports' values are float64 here; the attribute and shape checks
// are the CPU reference kernels' own (kernels/kernelArgs.ts).

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
