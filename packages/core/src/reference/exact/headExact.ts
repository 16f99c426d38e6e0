// Float64 kernels of the LM/MTP head ops (graph/ops/headOps.ts), after
// reference/kernels/headKernels.ts: row slices, views and the vocab gather layout are exact
// copies; argmax is decided on the float64 logits with torch.argmax's rule (the first index of
// the maximum, +0 and -0 tie, the first NaN wins), so it may pick another token than the
// reference where the bf16-rounded logits tie or nearly tie; mtpDraftIds moves ids.
import { numel } from '../../tensor/tensor.ts';
import { allocExact } from './basicExact.ts';
import type { F64Tensor, I32Tensor } from './exactInputs.ts';
import type { ExactKernelTable } from './exactTensor.ts';

/** Per row of logits [rows, vocab], the torch.argmax index (layers/mtp/lmHead.ts argmaxFirst on doubles). */
export function argmaxFirstF64(logits: Float64Array, rows: number, vocab: number): Int32Array {
  const out = new Int32Array(rows);
  for (let t = 0; t < rows; t++) {
    const base = t * vocab;
    let best = 0;
    let bestValue = logits[base];
    for (let v = 1; v < vocab && bestValue === bestValue; v++) {
      const x = logits[base + v];
      if (x > bestValue || x !== x) {
        best = v;
        bestValue = x;
      }
    }
    out[t] = best;
  }
  return out;
}

export const headExact: ExactKernelTable = {
  perRank: {
    sliceRows: ([xT], attrs) => {
      const x = xT!;
      const start = attrs.start as number;
      const end = attrs.end as number;
      const row = numel(x.shape.slice(1));
      return [{ dtype: x.dtype, shape: [end - start, ...x.shape.slice(1)], data: x.data.slice(start * row, end * row) }];
    },
    reshape: ([xT], attrs) => {
      const x = xT!;
      const shape = attrs.shape as number[];
      return [{ dtype: x.dtype, shape: [...shape], data: x.data.slice() }];
    },
    rowBlocksToCols: ([xT], attrs) => {
      const x = xT!;
      const [rows, cols] = x.shape;
      const parts = attrs.parts as number;
      const r = rows / parts;
      const y = allocExact(x.dtype, rows * cols);
      for (let p = 0; p < parts; p++) {
        for (let t = 0; t < r; t++) y.set(x.data.subarray((p * r + t) * cols, (p * r + t + 1) * cols) as never, t * parts * cols + p * cols);
      }
      return [{ dtype: x.dtype, shape: [r, parts * cols], data: y }];
    },
    argmax: ([logitsT]) => {
      const logits = logitsT as F64Tensor;
      const [rows, vocab] = logits.shape;
      return [{ dtype: 'i32', shape: [rows], data: argmaxFirstF64(logits.data, rows, vocab) }];
    },
    mtpDraftIds: ([idsT, nextT]) => {
      const ids = (idsT as I32Tensor).data;
      const next = (nextT as I32Tensor).data;
      const y = new Int32Array(ids.length);
      y.set(ids.subarray(1));
      y[ids.length - 1] = next[0];
      return [{ dtype: 'i32', shape: [ids.length], data: y }];
    },
  },
};
