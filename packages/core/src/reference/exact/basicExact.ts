// Float64 kernels of the basic ops (graph/ops/basicOps.ts), after reference/kernels/basicKernels.ts
// with every rounding dropped: linear is the k-ordered sum of the products in double (no fp32
// accumulator, no bf16 output rounding), add is a + b in double, the copies copy.
// Also the value helpers the other family files of this folder share.
import type { DType } from '../../tensor/tensor.ts';
import { numel, shapeStr } from '../../tensor/tensor.ts';
import type { F64Tensor, I32Tensor } from './exactInputs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

/** A float64 value of the declared dtype. */
export function f64(dtype: DType, shape: readonly number[], data: Float64Array): ExactTensor {
  if (data.length !== numel(shape)) throw new Error(`exact: shape ${shapeStr(shape)} needs ${numel(shape)} values, got ${data.length}`);
  return { dtype, shape: [...shape], data };
}

/** Storage for n elements of an exact value of `dtype`: Int32Array for i32, Float64Array otherwise. */
export function allocExact(dtype: DType, n: number): Float64Array | Int32Array {
  return dtype === 'i32' ? new Int32Array(n) : new Float64Array(n);
}

export const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
export const silu = (x: number): number => x / (1 + Math.exp(-x));

/** y[t,o] = sum_k x[t,k] * w[o,k] in double, k = 0..K-1 (the reference's order, without its fp32 accumulator). */
export function linearF64(x: Float64Array, w: Float64Array, rows: number, inF: number, outF: number): Float64Array {
  const y = new Float64Array(rows * outF);
  for (let t = 0; t < rows; t++) {
    const xo = t * inF;
    for (let o = 0; o < outF; o++) {
      const wo = o * inF;
      let a = 0;
      for (let k = 0; k < inF; k++) a += x[xo + k] * w[wo + k];
      y[t * outF + o] = a;
    }
  }
  return y;
}

export const basicExact: ExactKernelTable = {
  perRank: {
    linear: (inputs) => {
      const [x, w] = inputs as F64Tensor[];
      const [rows, inF] = x.shape;
      const outF = w.shape[0];
      return [f64('bf16', [rows, outF], linearF64(x.data, w.data, rows, inF, outF))];
    },
    add: (inputs) => {
      const [a, b] = inputs as F64Tensor[];
      const y = new Float64Array(a.data.length);
      for (let i = 0; i < y.length; i++) y[i] = a.data[i] + b.data[i];
      return [f64('bf16', a.shape, y)];
    },
    sliceCols: (inputs, attrs) => {
      const [x] = inputs as F64Tensor[];
      const [rows, cols] = x.shape;
      const start = attrs.start as number;
      const end = attrs.end as number;
      const width = end - start;
      const y = new Float64Array(rows * width);
      for (let t = 0; t < rows; t++) y.set(x.data.subarray(t * cols + start, t * cols + end), t * width);
      return [f64(x.dtype, [rows, width], y)];
    },
    embed: (inputs) => {
      const ids = inputs[0] as I32Tensor;
      const table = inputs[1] as F64Tensor;
      const [vocab, h] = table.shape;
      const e = new Float64Array(ids.data.length * h);
      ids.data.forEach((id, t) => {
        if (!(id >= 0 && id < vocab)) throw new Error(`embed: token id ${id} at position ${t} is outside the vocabulary [0, ${vocab})`);
        e.set(table.data.subarray(id * h, (id + 1) * h), t * h);
      });
      return [f64('bf16', [ids.data.length, h], e)];
    },
  },
};
