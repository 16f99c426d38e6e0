import type { WeightRef, WeightSlice } from '../graph/graph.ts';
import { allocData, numel, shapeStr, type Tensor } from '../tensor/tensor.ts';
import type { WeightSource } from './weightSource.ts';

/** Ranges of a row-major tensor along `axis`, concatenated in order (a rank's TP slice). */
export function sliceWeight(t: Tensor, slice: WeightSlice): Tensor {
  const { axis, ranges } = slice;
  if (!(axis >= 0 && axis < t.shape.length)) throw new Error(`weight slice: axis ${axis} is outside a ${t.shape.length}-D tensor`);
  const dim = t.shape[axis];
  for (const [a, b] of ranges) {
    if (!(Number.isInteger(a) && Number.isInteger(b) && a >= 0 && a < b && b <= dim)) {
      throw new Error(`weight slice: range [${a}, ${b}) is outside axis ${axis} of ${shapeStr(t.shape)}`);
    }
  }
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

function concatRows(parts: Tensor[], label: string): Tensor {
  const first = parts[0];
  const inner = first.shape.slice(1);
  for (const p of parts) {
    if (p.dtype !== first.dtype || shapeStr(p.shape.slice(1)) !== shapeStr(inner)) {
      throw new Error(`${label}: cannot concatenate ${p.dtype}${shapeStr(p.shape)} with ${first.dtype}${shapeStr(first.shape)}`);
    }
  }
  const rows = parts.reduce((acc, p) => acc + p.shape[0], 0);
  const out = allocData(first.dtype, rows * numel(inner));
  let o = 0;
  for (const p of parts) {
    out.set(p.data as never, o);
    o += p.data.length;
  }
  return { dtype: first.dtype, shape: [rows, ...inner], data: out };
}

/** The tensor a graph weight value stands for: checkpoint tensor(s), concatenated, sliced. */
export function resolveWeight(source: WeightSource, ref: WeightRef): Tensor {
  const full = ref.concat ? concatRows(ref.concat.map((n) => source.get(n)), ref.name) : source.get(ref.name);
  return ref.slice ? sliceWeight(full, ref.slice) : full;
}
