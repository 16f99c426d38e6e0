import { allocData, numel, shapeStr, type Tensor } from './tensor.ts';

/** Rows or columns [start, end) of a tensor along one axis, several ranges concatenated (a rank's TP slice). */
export interface AxisSlice {
  axis: number;
  ranges: [number, number][];
}

/** Checks a slice against a shape: axis in range, each range non-empty and inside the axis. */
export function checkAxisSlice(shape: readonly number[], slice: AxisSlice, label: string): void {
  const { axis, ranges } = slice;
  if (!(Number.isInteger(axis) && axis >= 0 && axis < shape.length)) throw new Error(`${label}: slice axis ${axis} is outside a ${shape.length}-D tensor`);
  for (const [a, b] of ranges) {
    if (!(Number.isInteger(a) && Number.isInteger(b) && a >= 0 && a < b && b <= shape[axis])) {
      throw new Error(`${label}: slice range [${a}, ${b}) is outside axis ${axis} of ${shapeStr(shape)}`);
    }
  }
}

/** The slice of a row-major tensor, copied. */
export function sliceTensor(t: Tensor, slice: AxisSlice): Tensor {
  checkAxisSlice(t.shape, slice, 'slice');
  const { axis, ranges } = slice;
  const dim = t.shape[axis];
  const outer = numel(t.shape.slice(0, axis));
  const inner = numel(t.shape.slice(axis + 1));
  const kept = ranges.reduce((acc, [a, b]) => acc + b - a, 0);
  const shape = [...t.shape];
  shape[axis] = kept;
  const out = allocData(t.dtype, outer * kept * inner);
  let o = 0;
  for (let i = 0; i < outer; i++) {
    for (const [a, b] of ranges) {
      const src = (i * dim + a) * inner;
      const len = (b - a) * inner;
      out.set(t.data.subarray(src, src + len) as never, o);
      o += len;
    }
  }
  return { dtype: t.dtype, shape, data: out };
}

/** Element count of a slice of a tensor of this shape. */
export function axisSliceNumel(shape: readonly number[], slice: AxisSlice): number {
  const kept = slice.ranges.reduce((acc, [a, b]) => acc + b - a, 0);
  return (numel(shape) / shape[slice.axis]) * kept;
}
