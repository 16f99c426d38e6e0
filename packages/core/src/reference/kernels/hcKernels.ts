import { combine, combineNorm } from '../../hc/combineNorm.ts';
import { parseHcContract } from '../../hc/hcContract.ts';
import { gatedMean, scaledSilu } from '../../hc/mix.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { bits } from './kernelArgs.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

/** Rows, streams n and stream width H of x [rows, n*H] (the declaration checks that n divides it). */
function streamGeometry(x: Tensor, attrs: Record<string, unknown>): { rows: number; n: number; h: number } {
  const n = attrs.streams as number;
  return { rows: x.shape[0], n, h: x.shape[1] / n };
}

export const hcKernels: CpuKernelTable = {
  perRank: {
    hcExpand: ([e], attrs) => {
      const n = attrs.streams as number;
      const [rows, h] = e!.shape;
      const src = bits(e);
      const x = new Uint16Array(rows * n * h);
      for (let t = 0; t < rows; t++) for (let s = 0; s < n; s++) x.set(src.subarray(t * h, (t + 1) * h), (t * n + s) * h);
      return [{ dtype: 'bf16', shape: [rows, n * h], data: x }];
    },
    hcCombineNorm: ([x, blockOut, raw, w], attrs) => {
      const { rows, n, h } = streamGeometry(x!, attrs);
      const r = combineNorm(
        bits(x),
        blockOut ? bits(blockOut) : null,
        raw ? bits(raw) : null,
        bits(w),
        rows,
        h,
        n,
        attrs.eps as number,
        parseHcContract(attrs.contract),
      );
      return [
        { dtype: 'bf16', shape: [rows, n * h], data: r.x },
        { dtype: 'bf16', shape: [rows, n * h], data: r.normed },
      ];
    },
    hcScaledSilu: ([d], attrs) => {
      const rows = d!.shape[0];
      const lowRank = attrs.lowRank as number;
      const n = attrs.streams as number;
      const r = scaledSilu(bits(d), rows, lowRank, n);
      return [{ dtype: 'bf16', shape: [rows, lowRank], data: r.gate }, r.raw ? { dtype: 'bf16', shape: [rows, n], data: r.raw } : null];
    },
    hcGatedMean: ([up, normed], attrs) => {
      const { rows, n, h } = streamGeometry(normed!, attrs);
      const x = gatedMean(bits(up), bits(normed), rows, h, n, parseHcContract(attrs.contract));
      return [{ dtype: 'bf16', shape: [rows, h], data: x }];
    },
    hcCombine: ([x, blockOut, raw], attrs) => {
      const { rows, n, h } = streamGeometry(x!, attrs);
      const y = combine(bits(x), bits(blockOut), bits(raw), rows, h, n, parseHcContract(attrs.contract));
      return [{ dtype: 'bf16', shape: [rows, n * h], data: y }];
    },
  },
};
