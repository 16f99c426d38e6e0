import { bf16ArrayToF32, bf16ToF32, f32ToBf16 } from '../../numerics/bf16.ts';
import { linearBf16 } from '../../layers/linearMath.ts';
import { allocData } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

export const basicKernels: CpuKernelTable = {
  perRank: {
    linear: ([x, w]) => {
      const [rows, inF] = x!.shape;
      const outF = w!.shape[0];
      const y = linearBf16(bf16ArrayToF32(x!.data as Uint16Array), bf16ArrayToF32(w!.data as Uint16Array), rows, inF, outF);
      return [{ dtype: 'bf16', shape: [rows, outF], data: y }];
    },
    add: ([a, b]) => {
      const ad = a!.data as Uint16Array;
      const bd = b!.data as Uint16Array;
      const y = new Uint16Array(ad.length);
      for (let i = 0; i < y.length; i++) y[i] = f32ToBf16(Math.fround(bf16ToF32(ad[i]) + bf16ToF32(bd[i])));
      return [{ dtype: 'bf16', shape: [...a!.shape], data: y }];
    },
    sliceCols: ([x], attrs) => {
      const [rows, cols] = x!.shape;
      const start = attrs.start as number;
      const end = attrs.end as number;
      const width = end - start;
      const y = allocData(x!.dtype, rows * width);
      for (let t = 0; t < rows; t++) y.set(x!.data.subarray(t * cols + start, t * cols + end) as never, t * width);
      return [{ dtype: x!.dtype, shape: [rows, width], data: y }];
    },
    embed: ([ids, table]) => {
      const [vocab, h] = table!.shape;
      const idArr = ids!.data as Int32Array;
      const tab = table!.data as Uint16Array;
      const e = new Uint16Array(idArr.length * h);
      idArr.forEach((id, t) => {
        if (!(id >= 0 && id < vocab)) throw new Error(`embed: token id ${id} at position ${t} is outside the vocabulary [0, ${vocab})`);
        e.set(tab.subarray(id * h, (id + 1) * h), t * h);
      });
      return [{ dtype: 'bf16', shape: [idArr.length, h], data: e }];
    },
  },
};
