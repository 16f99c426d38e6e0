import { bf16ToF32 } from '../../numerics/bf16.ts';
import { sigmoidF32 } from '../../numerics/fp32Math.ts';
import { type Fp8Format, fp8Info } from '../../numerics/fp8.ts';
import { type QuantStyle, quantizeBf16RowsFp8, quantizeFusedRowsFp8 } from '../../numerics/quant.ts';
import { fp8LinearPtpc, type PtpcScaleOrder, quantizeWeightPerChannel } from '../../layers/fp8Linear.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

const fr = Math.fround;

/** A bf16 matrix's bits and [rows, cols]. */
function bf16Matrix(t: Tensor | null): { data: Uint16Array; rows: number; cols: number } {
  return { data: t!.data as Uint16Array, rows: t!.shape[0], cols: t!.shape[1] };
}

/** An fp8 matrix and its f32 scale per row. */
function fp8Rows(qT: Tensor | null, sT: Tensor | null): { q: Uint8Array; scale: Float32Array; rows: number; cols: number } {
  return { q: qT!.data as Uint8Array, scale: sT!.data as Float32Array, rows: qT!.shape[0], cols: qT!.shape[1] };
}

const formatOf = (attrs: Record<string, unknown>): Fp8Format => attrs.format as Fp8Format;
const styleOf = (attrs: Record<string, unknown>): QuantStyle => attrs.style as QuantStyle;

/**
 * The gated mean before its bf16 rounding, v[t, j] (fp32), with hcGatedMean's 'atom' order
 * (hc/mix.ts) so that bf(v) is bit-identical to it: for s = 0..n-1,
 *   sig = sigmoidF32(up_s[j]); acc = fround(acc + fround(sig * normed_s[j])); v = fround(acc / n).
 * Rows are stream-major: stream s of row t is columns [s*H, (s+1)*H).
 */
function gatedMeanF32(up: Uint16Array, normed: Uint16Array, rows: number, h: number, n: number): Float32Array {
  const width = n * h;
  const v = new Float32Array(rows * h);
  for (let t = 0; t < rows; t++) {
    for (let j = 0; j < h; j++) {
      let acc = 0;
      for (let s = 0; s < n; s++) {
        const i = t * width + s * h + j;
        acc = fr(acc + fr(sigmoidF32(bf16ToF32(up[i])) * bf16ToF32(normed[i])));
      }
      v[t * h + j] = fr(acc / n);
    }
  }
  return v;
}

export const quantKernels: CpuKernelTable = {
  perRank: {
    quantFp8PerToken: ([xT], attrs) => {
      const format = formatOf(attrs);
      const x = bf16Matrix(xT);
      const { q, scale } = quantizeBf16RowsFp8(x.data, x.rows, x.cols, format, styleOf(attrs));
      return [
        { dtype: fp8Info(format).dtype, shape: [x.rows, x.cols], data: q },
        { dtype: 'f32', shape: [x.rows], data: scale },
      ];
    },
    hcGatedMeanQuant: ([upT, normedT], attrs) => {
      const format = formatOf(attrs);
      const up = bf16Matrix(upT);
      const normed = bf16Matrix(normedT);
      const n = attrs.streams as number;
      const h = normed.cols / n;
      const v = gatedMeanF32(up.data, normed.data, normed.rows, h, n);
      const { x, q, scale } = quantizeFusedRowsFp8(v, normed.rows, h, format, styleOf(attrs));
      return [
        { dtype: 'bf16', shape: [normed.rows, h], data: x },
        { dtype: fp8Info(format).dtype, shape: [normed.rows, h], data: q },
        { dtype: 'f32', shape: [normed.rows], data: scale },
      ];
    },
    fp8QuantWeightPerChannel: ([wT], attrs) => {
      const format = formatOf(attrs);
      const w = bf16Matrix(wT);
      const { q, scale } = quantizeWeightPerChannel(w.data, w.rows, w.cols, format);
      return [
        { dtype: fp8Info(format).dtype, shape: [w.rows, w.cols], data: q },
        { dtype: 'f32', shape: [w.rows], data: scale },
      ];
    },
    fp8LinearPtpc: ([qT, sxT, qwT, swT], attrs) => {
      const format = formatOf(attrs);
      const x = fp8Rows(qT, sxT);
      const w = fp8Rows(qwT, swT);
      const y = fp8LinearPtpc(x, w, x.rows, x.cols, w.rows, format, attrs.scaleOrder as PtpcScaleOrder);
      return [{ dtype: 'bf16', shape: [x.rows, w.rows], data: y }];
    },
  },
};
