// Float64 kernels of the hyper-connection ops (graph/ops/hcOps.ts), after
// reference/kernels/hcKernels.ts and the math it calls (hc/combineNorm.ts, hc/mix.ts), with
// every rounding dropped: no bf16 rounding of raw / n or d / n, no fp32 sigmoid/silu/rsqrt
// (Math.exp and Math.sqrt in double instead), no rounding of the stored values. The 'atom' and
// 'hf' contracts differ only in where they round, so both have the same exact value (the
// declaration checks the attribute). The norm keeps the reference's formula and epsilon (the
// attribute's value, in double): rstd = 1 / sqrt(sum_j X_j^2 / H + eps), normed = X * rstd * (1 + w).
import { f64, sigmoid, silu } from './basicExact.ts';
import type { F64Tensor } from './exactInputs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

/** Rows, streams n and stream width H of x [rows, n*H] (the declaration checks that n divides it). */
function streamGeometry(x: ExactTensor, attrs: Record<string, unknown>): { rows: number; n: number; h: number } {
  const n = attrs.streams as number;
  return { rows: x.shape[0], n, h: x.shape[1] / n };
}

/** X_s += y * 2 sigmoid(raw_s / n) for every row, in place (hc/combineNorm.ts combineRow without its roundings). */
function combineInPlace(x: Float64Array, y: Float64Array, raw: Float64Array, rows: number, h: number, n: number): void {
  const width = n * h;
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < n; s++) {
      const inj = 2 * sigmoid(raw[t * n + s] / n);
      const base = t * width + s * h;
      for (let j = 0; j < h; j++) x[base + j] += y[t * h + j] * inj;
    }
  }
}

export const hcExact: ExactKernelTable = {
  perRank: {
    hcExpand: ([eT], attrs) => {
      const e = eT as F64Tensor;
      const n = attrs.streams as number;
      const [rows, h] = e.shape;
      const x = new Float64Array(rows * n * h);
      for (let t = 0; t < rows; t++) for (let s = 0; s < n; s++) x.set(e.data.subarray(t * h, (t + 1) * h), (t * n + s) * h);
      return [f64('bf16', [rows, n * h], x)];
    },
    hcCombineNorm: (inputs, attrs) => {
      const [xIn, blockOut, raw, w] = inputs as (F64Tensor | null)[];
      const { rows, n, h } = streamGeometry(xIn!, attrs);
      const width = n * h;
      const eps = attrs.eps as number;
      const x = xIn!.data.slice();
      // blockOut and raw come together (the pending combine) or not at all
      if (blockOut && raw) combineInPlace(x, blockOut.data, raw.data, rows, h, n);
      const normed = new Float64Array(x.length);
      for (let t = 0; t < rows; t++) {
        for (let s = 0; s < n; s++) {
          const base = t * width + s * h;
          let sumsq = 0;
          for (let j = 0; j < h; j++) sumsq += x[base + j] * x[base + j];
          const rstd = 1 / Math.sqrt(sumsq / h + eps);
          for (let j = 0; j < h; j++) normed[base + j] = x[base + j] * rstd * (1 + w!.data[s * h + j]);
        }
      }
      return [f64('bf16', [rows, width], x), f64('bf16', [rows, width], normed)];
    },
    hcScaledSilu: ([dT], attrs) => {
      const d = dT as F64Tensor;
      // rows [lowRank + n] wide (mix) or [lowRank] (mixer)
      const [rows, width] = d.shape;
      const lowRank = attrs.lowRank as number;
      const n = attrs.streams as number;
      const gate = new Float64Array(rows * lowRank);
      const raw = width === lowRank ? null : new Float64Array(rows * n);
      for (let t = 0; t < rows; t++) {
        for (let j = 0; j < lowRank; j++) gate[t * lowRank + j] = silu(d.data[t * width + j] / n);
        if (raw) for (let s = 0; s < n; s++) raw[t * n + s] = d.data[t * width + lowRank + s];
      }
      return [f64('bf16', [rows, lowRank], gate), raw ? f64('bf16', [rows, n], raw) : null];
    },
    hcGatedMean: (inputs, attrs) => {
      const [up, normed] = inputs as F64Tensor[];
      const { rows, n, h } = streamGeometry(normed, attrs);
      return [f64('bf16', [rows, h], gatedMeanF64(up.data, normed.data, rows, h, n))];
    },
    hcCombine: (inputs, attrs) => {
      const [xIn, blockOut, raw] = inputs as F64Tensor[];
      const { rows, n, h } = streamGeometry(xIn, attrs);
      const x = xIn.data.slice();
      combineInPlace(x, blockOut.data, raw.data, rows, h, n);
      return [f64('bf16', [rows, n * h], x)];
    },
  },
};

/** x[t, j] = (sum_s sigmoid(up_s[j]) * normed_s[j]) / n, s = 0..n-1 in order, in double (hc/mix.ts gatedMean). */
export function gatedMeanF64(up: Float64Array, normed: Float64Array, rows: number, h: number, n: number): Float64Array {
  const width = n * h;
  const x = new Float64Array(rows * h);
  for (let t = 0; t < rows; t++) {
    for (let j = 0; j < h; j++) {
      let acc = 0;
      for (let s = 0; s < n; s++) {
        const i = t * width + s * h + j;
        acc += sigmoid(up[i]) * normed[i];
      }
      x[t * h + j] = acc / n;
    }
  }
  return x;
}
