import { bf16ToF32 } from '../../numerics/bf16.ts';
import { sigmoidF32 } from '../../numerics/fp32Math.ts';
import { type Fp8Format, fp8FormatOfDtype, fp8Info } from '../../numerics/fp8.ts';
import { type QuantStyle, quantizeBf16RowsFp8, quantizeFusedRowsFp8 } from '../../numerics/quant.ts';
import { fp8LinearPtpc, type PtpcScaleOrder, quantizeWeightPerChannel } from '../../layers/fp8Linear.ts';
import { shapeStr, type Tensor } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

const fr = Math.fround;

function bf16Matrix(t: Tensor | null, what: string): { data: Uint16Array; rows: number; cols: number } {
  if (!t) throw new Error(`${what} is missing`);
  if (t.dtype !== 'bf16' || t.shape.length !== 2) throw new Error(`${what} must be a 2-D bf16 tensor, got ${t.dtype} ${shapeStr(t.shape)}`);
  return { data: t.data as Uint16Array, rows: t.shape[0], cols: t.shape[1] };
}

/** format and style attrs, checked by value (fp8Info names an unknown format). */
function quantAttrs(op: string, attrs: Record<string, unknown>): { format: Fp8Format; style: QuantStyle } {
  const format = attrs.format as Fp8Format;
  fp8Info(format);
  const style = attrs.style;
  if (style !== 'divide' && style !== 'reciprocal') throw new Error(`${op}: style must be 'divide' or 'reciprocal', got '${String(style)}'`);
  return { format, style };
}

/** An fp8 matrix in `format` and its f32 scale per row. */
function fp8Rows(qT: Tensor | null, sT: Tensor | null, what: string, format: Fp8Format): { q: Uint8Array; scale: Float32Array; rows: number; cols: number } {
  if (!qT || !sT) throw new Error(`${what} and its scales are required`);
  if (qT.shape.length !== 2 || fp8FormatOfDtype(qT.dtype) !== format) {
    throw new Error(`${what} must be a 2-D ${fp8Info(format).dtype} tensor, got ${qT.dtype} ${shapeStr(qT.shape)}`);
  }
  const [rows, cols] = qT.shape;
  if (sT.dtype !== 'f32' || sT.shape.length !== 1 || sT.shape[0] !== rows)
    throw new Error(`${what} scales must be f32 [${rows}], got ${sT.dtype} ${shapeStr(sT.shape)}`);
  return { q: qT.data as Uint8Array, scale: sT.data as Float32Array, rows, cols };
}

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
      const { format, style } = quantAttrs('quantFp8PerToken', attrs);
      const x = bf16Matrix(xT, 'quantFp8PerToken x');
      const { q, scale } = quantizeBf16RowsFp8(x.data, x.rows, x.cols, format, style);
      return [
        { dtype: fp8Info(format).dtype, shape: [x.rows, x.cols], data: q },
        { dtype: 'f32', shape: [x.rows], data: scale },
      ];
    },
    hcGatedMeanQuant: ([upT, normedT], attrs) => {
      const { format, style } = quantAttrs('hcGatedMeanQuant', attrs);
      const up = bf16Matrix(upT, 'hcGatedMeanQuant up');
      const normed = bf16Matrix(normedT, 'hcGatedMeanQuant normed');
      const n = attrs.streams as number;
      if (!Number.isInteger(n) || n < 1 || normed.cols % n !== 0) {
        throw new Error(`hcGatedMeanQuant: streams ${String(n)} must be an integer >= 1 dividing normed's ${normed.cols} columns`);
      }
      if (up.rows !== normed.rows || up.cols !== normed.cols) {
        throw new Error(`hcGatedMeanQuant: up ${shapeStr(upT!.shape)} and normed ${shapeStr(normedT!.shape)} differ`);
      }
      const h = normed.cols / n;
      const v = gatedMeanF32(up.data, normed.data, normed.rows, h, n);
      const { x, q, scale } = quantizeFusedRowsFp8(v, normed.rows, h, format, style);
      return [
        { dtype: 'bf16', shape: [normed.rows, h], data: x },
        { dtype: fp8Info(format).dtype, shape: [normed.rows, h], data: q },
        { dtype: 'f32', shape: [normed.rows], data: scale },
      ];
    },
    fp8QuantWeightPerChannel: ([wT], attrs) => {
      const format = attrs.format as Fp8Format;
      fp8Info(format);
      const w = bf16Matrix(wT, 'fp8QuantWeightPerChannel w');
      const { q, scale } = quantizeWeightPerChannel(w.data, w.rows, w.cols, format);
      return [
        { dtype: fp8Info(format).dtype, shape: [w.rows, w.cols], data: q },
        { dtype: 'f32', shape: [w.rows], data: scale },
      ];
    },
    fp8LinearPtpc: ([qT, sxT, qwT, swT], attrs) => {
      const format = attrs.format as Fp8Format;
      fp8Info(format);
      const x = fp8Rows(qT, sxT, 'fp8LinearPtpc q', format);
      const w = fp8Rows(qwT, swT, 'fp8LinearPtpc qW', format);
      if (w.cols !== x.cols) throw new Error(`fp8LinearPtpc: q has ${x.cols} columns, qW ${w.cols}`);
      const y = fp8LinearPtpc(x, w, x.rows, x.cols, w.rows, format, attrs.scaleOrder as PtpcScaleOrder);
      return [{ dtype: 'bf16', shape: [x.rows, w.rows], data: y }];
    },
  },
};
