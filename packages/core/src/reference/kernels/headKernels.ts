import { argmaxFirst } from '../../layers/mtp/lmHead.ts';
import { allocData, numel, shapeStr } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';
import { dims2, input } from './kernelArgs.ts';

// CPU reference kernels of the LM/MTP head ops (graph/ops/headOps.ts): copies and the
// torch.argmax rule of layers/mtp/lmHead.ts.

export const headKernels: CpuKernelTable = {
  perRank: {
    sliceRows: ([x], attrs) => {
      const start = attrs.start as number;
      const end = attrs.end as number;
      if (!(start >= 0 && start < end && end <= x!.shape[0])) throw new Error(`sliceRows: rows [${start}, ${end}) are outside [0, ${x!.shape[0]})`);
      const row = numel(x!.shape.slice(1));
      return [{ dtype: x!.dtype, shape: [end - start, ...x!.shape.slice(1)], data: x!.data.slice(start * row, end * row) }];
    },
    reshape: ([x], attrs) => {
      const shape = attrs.shape as number[];
      if (numel(shape) !== x!.data.length) throw new Error(`reshape: ${shapeStr(x!.shape)} cannot be viewed as ${shapeStr(shape)}`);
      return [{ dtype: x!.dtype, shape: [...shape], data: x!.data.slice() }];
    },
    rowBlocksToCols: ([x], attrs) => {
      const [rows, cols] = dims2(x!, 'rowBlocksToCols x');
      const parts = attrs.parts as number;
      if (!(Number.isInteger(parts) && parts >= 1 && rows % parts === 0)) throw new Error(`rowBlocksToCols: ${rows} rows do not split into ${parts} blocks`);
      const r = rows / parts;
      const y = allocData(x!.dtype, rows * cols);
      for (let p = 0; p < parts; p++) {
        for (let t = 0; t < r; t++) y.set(x!.data.subarray((p * r + t) * cols, (p * r + t + 1) * cols) as never, t * parts * cols + p * cols);
      }
      return [{ dtype: x!.dtype, shape: [r, parts * cols], data: y }];
    },
    argmax: (inputs) => {
      const logits = input(inputs, 0, 'logits', 'argmax', 'bf16');
      const [rows, vocab] = dims2(logits, 'argmax logits');
      return [{ dtype: 'i32', shape: [rows], data: argmaxFirst(logits.data as Uint16Array, rows, vocab) }];
    },
    mtpDraftIds: (inputs) => {
      const ids = input(inputs, 0, 'ids', 'mtpDraftIds', 'i32').data as Int32Array;
      const next = input(inputs, 1, 'next', 'mtpDraftIds', 'i32').data as Int32Array;
      if (ids.length < 1 || next.length !== 1) throw new Error(`mtpDraftIds: ids [${ids.length}] and next [${next.length}] must be [T >= 1] and [1]`);
      const y = new Int32Array(ids.length);
      y.set(ids.subarray(1));
      y[ids.length - 1] = next[0];
      return [{ dtype: 'i32', shape: [ids.length], data: y }];
    },
  },
};
