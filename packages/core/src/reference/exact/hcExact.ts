// Float64 kernels of the hyper-connection ops (graph/ops/hcOps.ts), after
// reference/kernels/hcKernels.ts and the math it calls (hc/combineNorm.ts, hc/mix.ts), with
// every rounding dropped: no bf16 rounding of raw / n or d / n, no fp32 sigmoid/silu/rsqrt
// (Math.exp and Math.sqrt in double instead), no rounding of the stored values. The 'atom' and
// 'hf' contracts differ only in where they round, so both have the same exact value (the
// attribute is still checked). The norm keeps the reference's formula and epsilon (the
// attribute's value, in double): rstd = 1 / sqrt(sum_j X_j^2 / H + eps), normed = X * rstd * (1 + w).
import { parseHcContract } from '../../hc/hcContract.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import { f64, floats, sigmoid, silu } from './basicExact.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

function streamGeometry(x: ExactTensor, attrs: Record<string, unknown>): { rows: number; n: number; h: number } {
  const n = attrs.streams as number;
  const rows = x.shape[0];
  const width = x.shape[1];
  if (x.shape.length !== 2 || width % n !== 0) throw new Error(`HC op: x must be [rows, ${n}*H], got [${x.shape.join(',')}]`);
  return { rows, n, h: width / n };
}

/** X_s += y * 2 sigmoid(raw_s / n) for every row, in place (hc/combineNorm.ts combineRow without its roundings). */
function combineInPlace(x: Float64Array, y: Float64Array, raw: Float64Array, rows: number, h: number, n: number): void {
  const width = n * h;
  if (y.length !== rows * h) throw new Error(`HC combine: blockOut has ${y.length} values, expected ${rows}x${h}`);
  if (raw.length !== rows * n) throw new Error(`HC combine: raw has ${raw.length} values, expected ${rows}x${n}`);
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
      const e = floats(eT, 'hcExpand e');
      const n = attrs.streams as number;
      const [rows, h] = e.shape;
      const x = new Float64Array(rows * n * h);
      for (let t = 0; t < rows; t++) for (let s = 0; s < n; s++) x.set(e.data.subarray(t * h, (t + 1) * h), (t * n + s) * h);
      return [f64('bf16', [rows, n * h], x)];
    },
    hcCombineNorm: ([xT, blockOutT, rawT, wT], attrs) => {
      parseHcContract(attrs.contract);
      const xIn = floats(xT, 'hcCombineNorm x');
      const { rows, n, h } = streamGeometry(xIn, attrs);
      const width = n * h;
      if ((blockOutT === null) !== (rawT === null)) throw new Error('hcCombineNorm: blockOut and raw come together (the pending combine) or not at all');
      const w = floats(wT, 'hcCombineNorm normWeight');
      if (w.data.length !== width) throw new Error(`hcCombineNorm: norm weight has ${w.data.length} values, expected ${width}`);
      const eps = attrs.eps as number;
      const x = xIn.data.slice();
      if (blockOutT && rawT) combineInPlace(x, floats(blockOutT, 'hcCombineNorm blockOut').data, floats(rawT, 'hcCombineNorm raw').data, rows, h, n);
      const normed = new Float64Array(x.length);
      for (let t = 0; t < rows; t++) {
        for (let s = 0; s < n; s++) {
          const base = t * width + s * h;
          let sumsq = 0;
          for (let j = 0; j < h; j++) sumsq += x[base + j] * x[base + j];
          const rstd = 1 / Math.sqrt(sumsq / h + eps);
          for (let j = 0; j < h; j++) normed[base + j] = x[base + j] * rstd * (1 + w.data[s * h + j]);
        }
      }
      return [f64('bf16', [rows, width], x), f64('bf16', [rows, width], normed)];
    },
    hcScaledSilu: ([dT], attrs) => {
      const d = floats(dT, 'hcScaledSilu d');
      const rows = d.shape[0];
      const lowRank = attrs.lowRank as number;
      const n = attrs.streams as number;
      const width = d.data.length / rows;
      if (!Number.isInteger(width) || (width !== lowRank + n && width !== lowRank)) {
        throw new Error(`hcScaledSilu: d rows must be ${lowRank + n} (mix) or ${lowRank} (mixer) wide, got ${shapeStr(d.shape)}`);
      }
      const gate = new Float64Array(rows * lowRank);
      const raw = width === lowRank ? null : new Float64Array(rows * n);
      for (let t = 0; t < rows; t++) {
        for (let j = 0; j < lowRank; j++) gate[t * lowRank + j] = silu(d.data[t * width + j] / n);
        if (raw) for (let s = 0; s < n; s++) raw[t * n + s] = d.data[t * width + lowRank + s];
      }
      return [f64('bf16', [rows, lowRank], gate), raw ? f64('bf16', [rows, n], raw) : null];
    },
    hcGatedMean: ([upT, normedT], attrs) => {
      parseHcContract(attrs.contract);
      const up = floats(upT, 'hcGatedMean up');
      const normed = floats(normedT, 'hcGatedMean normed');
      const { rows, n, h } = streamGeometry(normed, attrs);
      if (up.data.length !== normed.data.length) throw new Error(`hcGatedMean: up ${shapeStr(up.shape)} and normed ${shapeStr(normed.shape)} differ`);
      return [f64('bf16', [rows, h], gatedMeanF64(up.data, normed.data, rows, h, n))];
    },
    hcCombine: ([xT, blockOutT, rawT], attrs) => {
      parseHcContract(attrs.contract);
      const xIn = floats(xT, 'hcCombine x');
      const { rows, n, h } = streamGeometry(xIn, attrs);
      const x = xIn.data.slice();
      combineInPlace(x, floats(blockOutT, 'hcCombine blockOut').data, floats(rawT, 'hcCombine raw').data, rows, h, n);
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
