import { bf16ToF32 } from '../../numerics/bf16.ts';
import { sigmoidF32 } from '../../numerics/fp32Math.ts';
import { type Fp8Format, fp8Info } from '../../numerics/fp8.ts';
import { type QuantStyle, quantizeBf16RowsFp8, quantizeFusedRowsFp8 } from '../../numerics/quant.ts';
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
  },
};
