// Float64 kernels of the FP8 PTPC ops (graph/ops/quantOps.ts), after reference/kernels/quantKernels.ts.
// The exact evaluation does NOT quantize: fp8 quantization is one of the roundings under study,
// so the exact value of a quantized tensor is the tensor itself. A quantize op therefore outputs
// the float64 values unchanged in its fp8 port (the value keeps the fp8 dtype the graph
// declares; its data is float64 like every exact value) and a scale of 1 per row, so that
// dequantizing (q * scale) anywhere downstream gives back exactly those values. The FP8 GEMM
// computes sum_k (q[t,k] * sx[t]) * (qW[o,k] * sw[o]) in double from the dequantized operands it
// gets: on exact inputs that is x . w^T itself; on the fp8 operands of a reference run (widened)
// it is the exact product of those dequantized operands, with no fp32 accumulation, no fp32
// epilogue and no bf16 output rounding. `format` picks the fp8 dtype of a quantize op's
// output; `style` and `scaleOrder` change nothing: they only choose the reference's roundings.
import { fp8Info, type Fp8Format } from '../../numerics/fp8.ts';
import { f64 } from './basicExact.ts';
import type { F64Tensor } from './exactInputs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';
import { gatedMeanF64 } from './hcExact.ts';

const formatOf = (attrs: Record<string, unknown>): Fp8Format => attrs.format as Fp8Format;

/** The unquantized "quantization" of [rows, cols] values: q = x in the fp8 port, scale 1 per row. */
function identityQuant(x: Float64Array, rows: number, cols: number, format: Fp8Format): [ExactTensor, ExactTensor] {
  return [f64(fp8Info(format).dtype, [rows, cols], x.slice()), f64('f32', [rows], new Float64Array(rows).fill(1))];
}

/** An fp8 operand with its per-row scales, dequantized in double: q[t,k] * s[t] (exact for fp8 q and f32 s). */
function dequantized(q: F64Tensor, s: F64Tensor): { v: Float64Array; rows: number; cols: number } {
  const [rows, cols] = q.shape;
  const v = new Float64Array(rows * cols);
  for (let t = 0; t < rows; t++) for (let k = 0; k < cols; k++) v[t * cols + k] = q.data[t * cols + k] * s.data[t];
  return { v, rows, cols };
}

export const quantExact: ExactKernelTable = {
  perRank: {
    quantFp8PerToken: ([xT], attrs) => {
      const x = xT as F64Tensor;
      const [rows, cols] = x.shape;
      return identityQuant(x.data, rows, cols, formatOf(attrs));
    },
    hcGatedMeanQuant: (inputs, attrs) => {
      const format = formatOf(attrs);
      const [up, normed] = inputs as F64Tensor[];
      const [rows, width] = normed.shape;
      const n = attrs.streams as number;
      const h = width / n;
      // the gated mean as hcGatedMean's exact kernel computes it; its "quantization" is the identity
      const x = gatedMeanF64(up.data, normed.data, rows, h, n);
      return [f64('bf16', [rows, h], x), ...identityQuant(x, rows, h, format)];
    },
    fp8QuantWeightPerChannel: ([wT], attrs) => {
      const w = wT as F64Tensor;
      const [rows, cols] = w.shape;
      return identityQuant(w.data, rows, cols, formatOf(attrs));
    },
    fp8LinearPtpc: (inputs) => {
      const [q, sx, qW, sw] = inputs as F64Tensor[];
      const x = dequantized(q, sx);
      const w = dequantized(qW, sw);
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
