import { argmaxFirst } from '../../layers/mtp/lmHead.ts';
import { allocData, numel } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

// CPU reference kernels of the LM/MTP head ops (graph/ops/headOps.ts): copies and the
// torch.argmax rule of layers/mtp/lmHead.ts.

export const headKernels: CpuKernelTable = {
  perRank: {
    sliceRows: ([x], attrs) => {
      const start = attrs.start as number;
      const end = attrs.end as number;
      const row = numel(x!.shape.slice(1));
      return [{ dtype: x!.dtype, shape: [end - start, ...x!.shape.slice(1)], data: x!.data.slice(start * row, end * row) }];
    },
    reshape: ([x], attrs) => {
      const shape = attrs.shape as number[];
      return [{ dtype: x!.dtype, shape: [...shape], data: x!.data.slice() }];
    },
    rowBlocksToCols: ([x], attrs) => {
      const [rows, cols] = x!.shape;
      const parts = attrs.parts as number;
      const r = rows / parts;
      const y = allocData(x!.dtype, rows * cols);
      for (let p = 0; p < parts; p++) {
        for (let t = 0; t < r; t++) y.set(x!.data.subarray((p * r + t) * cols, (p * r + t + 1) * cols) as never, t * parts * cols + p * cols);
      }
      return [{ dtype: x!.dtype, shape: [r, parts * cols], data: y }];
    },
    argmax: ([logits]) => {
      const [rows, vocab] = logits!.shape;
      return [{ dtype: 'i32', shape: [rows], data: argmaxFirst(logits!.data as Uint16Array, rows, vocab) }];
    },
    mtpDraftIds: ([idsT, nextT]) => {
      const ids = idsT!.data as Int32Array;
      const next = nextT!.data as Int32Array;
      const y = new Int32Array(ids.length);
      y.set(ids.subarray(1));
      y[ids.length - 1] = next[0];
      return [{ dtype: 'i32', shape: [ids.length], data: y }];
    },
  },
};
