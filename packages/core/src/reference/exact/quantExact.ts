// Float64 kernels of the FP8 PTPC ops (graph/ops/quantOps.ts), after reference/kernels/quantKernels.ts.
// The exact evaluation does NOT quantize: fp8 quantization is one of the roundings under study,
// so the exact value of a quantized tensor is the tensor itself. A quantize op therefore outputs
// the float64 values unchanged in its fp8 port (the value keeps the fp8 dtype the graph
// declares; its data is float64 like every exact value) and a scale of 1 per row, so that
// dequantizing (q * scale) anywhere downstream gives back exactly those values. The FP8 GEMM
// computes sum_k (q[t,k] * sx[t]) * (qW[o,k] * sw[o]) in double from the dequantized operands it
// gets: on exact inputs that is x . w^T itself; on the fp8 operands of a reference run (widened)
// it is the exact product of those dequantized operands, with no fp32 accumulation, no fp32
// epilogue and no bf16 output rounding. `format`, `style` and `scaleOrder` are checked but
// change nothing: they only choose the reference's roundings.
import { fp8Info, type Fp8Format } from '../../numerics/fp8.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import { dims2of, f64, floats } from './basicExact.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';
import { gatedMeanF64 } from './hcExact.ts';

function formatAttr(op: string, attrs: Record<string, unknown>): Fp8Format {
  const format = attrs.format;
  if (format !== 'e4m3fn' && format !== 'e4m3fnuz') throw new Error(`${op}: format must be 'e4m3fn' or 'e4m3fnuz', got '${String(format)}'`);
  return format;
}

function styleAttr(op: string, attrs: Record<string, unknown>): void {
  const style = attrs.style;
  if (style !== 'divide' && style !== 'reciprocal') throw new Error(`${op}: style must be 'divide' or 'reciprocal', got '${String(style)}'`);
}

/** The unquantized "quantization" of [rows, cols] values: q = x in the fp8 port, scale 1 per row. */
function identityQuant(x: Float64Array, rows: number, cols: number, format: Fp8Format): [ExactTensor, ExactTensor] {
  return [f64(fp8Info(format).dtype, [rows, cols], x.slice()), f64('f32', [rows], new Float64Array(rows).fill(1))];
}

/** An fp8 operand with its per-row scales, dequantized in double: q[t,k] * s[t] (exact for fp8 q and f32 s). */
function dequantized(qT: ExactTensor | null, sT: ExactTensor | null, what: string, format: Fp8Format): { v: Float64Array; rows: number; cols: number } {
  const q = floats(qT, what);
  const s = floats(sT, `${what} scales`);
  if (q.dtype !== fp8Info(format).dtype) throw new Error(`${what} must be ${fp8Info(format).dtype}, got ${q.dtype}`);
  const [rows, cols] = dims2of(q, what);
  if (s.shape.length !== 1 || s.shape[0] !== rows) throw new Error(`${what} scales must be [${rows}], got ${shapeStr(s.shape)}`);
  const v = new Float64Array(rows * cols);
  for (let t = 0; t < rows; t++) for (let k = 0; k < cols; k++) v[t * cols + k] = q.data[t * cols + k] * s.data[t];
  return { v, rows, cols };
}

export const quantExact: ExactKernelTable = {
  perRank: {
    quantFp8PerToken: ([xT], attrs) => {
      const format = formatAttr('quantFp8PerToken', attrs);
      styleAttr('quantFp8PerToken', attrs);
      const x = floats(xT, 'quantFp8PerToken x');
      const [rows, cols] = dims2of(x, 'quantFp8PerToken x');
      return identityQuant(x.data, rows, cols, format);
    },
    hcGatedMeanQuant: ([upT, normedT], attrs) => {
      const format = formatAttr('hcGatedMeanQuant', attrs);
      styleAttr('hcGatedMeanQuant', attrs);
      const up = floats(upT, 'hcGatedMeanQuant up');
      const normed = floats(normedT, 'hcGatedMeanQuant normed');
      const [rows, width] = dims2of(normed, 'hcGatedMeanQuant normed');
      const n = attrs.streams as number;
      if (!Number.isInteger(n) || n < 1 || width % n !== 0)
        throw new Error(`hcGatedMeanQuant: streams ${String(n)} must be an integer >= 1 dividing normed's ${width} columns`);
      if (shapeStr(up.shape) !== shapeStr(normed.shape))
        throw new Error(`hcGatedMeanQuant: up ${shapeStr(up.shape)} and normed ${shapeStr(normed.shape)} differ`);
      const h = width / n;
      // the gated mean as hcGatedMean's exact kernel computes it; its "quantization" is the identity
      const x = gatedMeanF64(up.data, normed.data, rows, h, n);
      return [f64('bf16', [rows, h], x), ...identityQuant(x, rows, h, format)];
    },
    fp8QuantWeightPerChannel: ([wT], attrs) => {
      const format = formatAttr('fp8QuantWeightPerChannel', attrs);
      const w = floats(wT, 'fp8QuantWeightPerChannel w');
      const [rows, cols] = dims2of(w, 'fp8QuantWeightPerChannel w');
      return identityQuant(w.data, rows, cols, format);
    },
    fp8LinearPtpc: ([qT, sxT, qwT, swT], attrs) => {
      const format = formatAttr('fp8LinearPtpc', attrs);
      const order = attrs.scaleOrder;
      if (order !== 'weightFirst' && order !== 'tokenFirst') throw new Error(`fp8LinearPtpc: unknown scale order '${String(order)}'`);
      const x = dequantized(qT, sxT, 'fp8LinearPtpc q', format);
      const w = dequantized(qwT, swT, 'fp8LinearPtpc qW', format);
      if (w.cols !== x.cols) throw new Error(`fp8LinearPtpc: q has ${x.cols} columns, qW ${w.cols}`);
      const y = new Float64Array(x.rows * w.rows);
      for (let t = 0; t < x.rows; t++) {
        for (let o = 0; o < w.rows; o++) {
          let acc = 0;
          for (let k = 0; k < x.cols; k++) acc += x.v[t * x.cols + k] * w.v[o * x.cols + k];
          y[t * w.rows + o] = acc;
        }
      }
      return [f64('bf16', [x.rows, w.rows], y)];
    },
  },
};
