import { bf16ArrayToF32, bf16ToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { canonicalSumF32 } from '../../numerics/canonicalSum.ts';
import { rsqrtF32, sigmoidF32, siluF32, sqrtF32 } from '../../numerics/fp32Math.ts';
import { linearBf16 } from '../linearMath.ts';
import { pleNgramIds, type PleHashParams } from './pleHash.ts';

// PLE (model.md "PLE"), one function per graph-op-sized step, as the reference computes it:
// HF modeling_qwen4_exp.py `Qwen4ExpTextPLELayer.forward` (eager bf16 torch ops) and ATOM
// atom/model_ops/qwen4_exp/ple.py (`Qwen4ExpPLELayer.gated_memory`, `ple_gate`,
// `dilated_causal_conv1d`). bf16 values travel as Uint16Array bit patterns; fp32 is
// emulated with Math.fround after every operation. The long sums (the norms' sums of squares,
// the gate's dot over H) run in canonical reduction order v1 (numerics/canonicalSum.ts), the
// short ones (the conv's taps) in index order. Every value the reference stores in bf16 is
// rounded here at the same point.
const fr = Math.fround;

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`ple: ${what} has ${arr.length} values, expected ${expected}`);
}

/**
 * E[t] = concat over heads h of table[ids[t, h]]: ids [T, heads] already carry the head
 * offsets (pleNgramIds), table is the padded `ngram_embedding.weight` [rows, headDim].
 * Exact (a gather); an id outside the table is an error.
 */
export function pleNgramEmbed(ids: Int32Array, heads: number, table: Uint16Array, headDim: number): Uint16Array {
  if (!Number.isInteger(heads) || heads < 1 || ids.length % heads !== 0) throw new Error(`ple: ${ids.length} n-gram ids do not fill rows of ${heads} heads`);
  if (!Number.isInteger(headDim) || headDim < 1 || table.length % headDim !== 0)
    throw new Error(`ple: table of ${table.length} values is not [rows, ${headDim}]`);
  const rows = table.length / headDim;
  const e = new Uint16Array(ids.length * headDim);
  ids.forEach((id, i) => {
    if (!(id >= 0 && id < rows))
      throw new Error(`ple: n-gram id ${id} (position ${Math.floor(i / heads)}, head ${i % heads}) is outside the table [0, ${rows})`);
    e.set(table.subarray(id * headDim, (id + 1) * headDim), i * headDim);
  });
  return e;
}

/** bf16 -0.0: what a rank's slice gives for an id another rank holds (pleNgramEmbedShard) */
export const BF16_NEGATIVE_ZERO = 0x8000;

/**
 * pleNgramEmbed on the rows [rowStart, rowStart + rows) of a table of tableRows rows (one
 * rank's vocab slice): a head whose id falls in the slice gets its row, any other -0.0, the
 * identity of the ranks' all-reduce. An id outside [0, tableRows) is an error.
 */
export function pleNgramEmbedShard(ids: Int32Array, heads: number, slice: Uint16Array, headDim: number, rowStart: number, tableRows: number): Uint16Array {
  if (!Number.isInteger(heads) || heads < 1 || ids.length % heads !== 0) throw new Error(`ple: ${ids.length} n-gram ids do not fill rows of ${heads} heads`);
  if (!Number.isInteger(headDim) || headDim < 1 || slice.length % headDim !== 0)
    throw new Error(`ple: table slice of ${slice.length} values is not [rows, ${headDim}]`);
  const rows = slice.length / headDim;
  if (!(Number.isInteger(rowStart) && rowStart >= 0 && rowStart + rows <= tableRows))
    throw new Error(`ple: the slice [${rowStart}, ${rowStart + rows}) is not within the table's ${tableRows} rows`);
  const e = new Uint16Array(ids.length * headDim).fill(BF16_NEGATIVE_ZERO);
  ids.forEach((id, i) => {
    if (!(id >= 0 && id < tableRows))
      throw new Error(`ple: n-gram id ${id} (position ${Math.floor(i / heads)}, head ${i % heads}) is outside the table [0, ${tableRows})`);
    const local = id - rowStart;
    if (local >= 0 && local < rows) e.set(slice.subarray(local * headDim, (local + 1) * headDim), i * headDim);
  });
  return e;
}

/**
 * RMS1p, grouped (HF `Qwen4ExpTextRMSNorm(group_size=H)`, ATOM `Qwen4ExpGroupedRMSNorm`),
 * per row and group of groupSize columns: sumsq = sum x^2 (fp32 in canonical reduction order
 * v1; bf16 squares are exact, so each add is one rounding), rstd = 1/sqrt(sumsq/groupSize + eps), y = bf(x * rstd * (1 + w)): fp32 products in
 * that order, one rounding. w is stored as an offset from 0 (checkpoint zeros = identity).
 */
export function pleRms1pNorm(x: Uint16Array, rows: number, groups: number, groupSize: number, weight: Uint16Array, eps: number): Uint16Array {
  const width = groups * groupSize;
  checkLength('norm input', x, rows * width);
  checkLength('norm weight', weight, width);
  const scale = Float32Array.from(weight, (w) => fr(1 + bf16ToF32(w)));
  const epsF = fr(eps);
  const y = new Uint16Array(x.length);
  for (let t = 0; t < rows; t++) {
    for (let g = 0; g < groups; g++) {
      const base = t * width + g * groupSize;
      const sumsq = canonicalSumF32(groupSize, (j) => {
        const v = bf16ToF32(x[base + j]);
        return v * v;
      });
      const rstd = rsqrtF32(fr(fr(sumsq / groupSize) + epsF));
      for (let j = 0; j < groupSize; j++) y[base + j] = f32ToBf16(fr(fr(bf16ToF32(x[base + j]) * rstd) * scale[g * groupSize + j]));
    }
  }
  return y;
}

/** clamp_min of the signed square root (HF `gate.abs().clamp_min(1e-6)`), an fp32 constant. */
export const PLE_GATE_SQRT_FLOOR = fr(1e-6);

/**
 * The gate per row t and stream s, from the normed key and query of that stream (both
 * [T, n*H], stream-major). Each line is one eager bf16 op of HF (ATOM's `_ple_gate_kernel`
 * keeps every rounding):
 *   p_j = bf(k_j * q_j)                   products rounded before the sum
 *   s   = bf(sum_j p_j)                   fp32 accumulation in canonical reduction order v1, one rounding
 *   s   = bf(s / sqrt(H))                 sqrt(H) rounded to fp32 once
 *   a   = bf(max(|s|, 1e-6))              (redundant after the line above unless |s| < 1e-6)
 *   g   = sign(s) * bf(sqrt(a))           sign(0) = 0, so a zero score gives gate 0.5
 *   out = bf(sigmoid(g))                  [T, n] bf16
 */
export function pleGate(kNormed: Uint16Array, qNormed: Uint16Array, rows: number, streams: number, hidden: number): Uint16Array {
  checkLength('normed keys', kNormed, rows * streams * hidden);
  checkLength('normed queries', qNormed, rows * streams * hidden);
  const sqrtH = sqrtF32(hidden);
  const gate = new Uint16Array(rows * streams);
  for (let r = 0; r < rows * streams; r++) {
    const o = r * hidden;
    const acc = canonicalSumF32(hidden, (j) => roundBf16(fr(bf16ToF32(kNormed[o + j]) * bf16ToF32(qNormed[o + j]))));
    const score = roundBf16(fr(roundBf16(acc) / sqrtH));
    const root = roundBf16(sqrtF32(roundBf16(Math.max(Math.abs(score), PLE_GATE_SQRT_FLOOR))));
    const g = score > 0 ? root : score < 0 ? -root : 0;
    gate[r] = f32ToBf16(sigmoidF32(g));
  }
  return gate;
}

/** G[t, s*H + j] = bf(gate[t,s] * value[t,j]): the one value row, scaled per stream. gate [T, n] bf16. */
export function pleGatedValue(gate: Uint16Array, value: Uint16Array, rows: number, streams: number, hidden: number): Uint16Array {
  checkLength('gate', gate, rows * streams);
  checkLength('value', value, rows * hidden);
  const g = new Uint16Array(rows * streams * hidden);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < streams; s++) {
      const gs = bf16ToF32(gate[t * streams + s]);
      const o = (t * streams + s) * hidden;
      for (let j = 0; j < hidden; j++) g[o + j] = f32ToBf16(fr(gs * bf16ToF32(value[t * hidden + j])));
    }
  }
  return g;
}

/**
 * out = bf(G + bf(silu(bf(conv)))), conv the dilated causal depthwise conv1d of the normed
 * values, per channel c (weight `conv1d.weight` [C, 1, K] read as [C, K]):
 *   conv[t,c] = sum_{i=0..K-1} w[c,i] * Gn[t - (K-1-i)*dilation, c]
 * so for K = 4, dilation 3 the taps are t-9, t-6, t-3, t (PyTorch Conv1d, left padding
 * (K-1)*dilation; ATOM `_conv`). Accumulated in fp32 from tap 0, one tap at a time (bf16
 * products are exact, so FMA or not gives the same bits); taps before the start are zeros
 * (skipped: adding a zero product changes no bit of the sum). silu(x) = x * sigmoid(x) in
 * fp32 (ATOM's form).
 */
export function pleConvSilu(
  gNormed: Uint16Array,
  g: Uint16Array,
  convWeight: Uint16Array,
  rows: number,
  channels: number,
  kernel: number,
  dilation: number,
): Uint16Array {
  checkLength('normed values', gNormed, rows * channels);
  checkLength('values', g, rows * channels);
  checkLength('conv weight', convWeight, channels * kernel);
  if (!Number.isInteger(dilation) || dilation < 1) throw new Error(`ple: conv dilation ${dilation} must be a positive integer`);
  const w = bf16ArrayToF32(convWeight);
  const out = new Uint16Array(rows * channels);
  for (let t = 0; t < rows; t++) {
    for (let c = 0; c < channels; c++) {
      let acc = 0;
      for (let i = 0; i < kernel; i++) {
        const src = t - (kernel - 1 - i) * dilation;
        if (src >= 0) acc = fr(acc + w[c * kernel + i] * bf16ToF32(gNormed[src * channels + c]));
      }
      const act = roundBf16(siluF32(roundBf16(acc)));
      out[t * channels + c] = f32ToBf16(fr(bf16ToF32(g[t * channels + c]) + act));
    }
  }
  return out;
}

/** The PLE's weights as bf16 patterns (pleWeights.ts names them). */
export interface PleWeightData {
  /** ple_embedding.ngram_embedding.weight [paddedRows, headDim] (the shards concatenated) */
  table: Uint16Array;
  /** key_proj.weight [n*H, embedDim]: one key per stream */
  keyProj: Uint16Array;
  /** value_proj.weight [H, embedDim] */
  valueProj: Uint16Array;
  /** norm_key.weight [n*H] (RMS1p offsets, one group per stream) */
  normKey: Uint16Array;
  /** norm_query.weight [n*H] */
  normQuery: Uint16Array;
  /** norm_conv.weight [n*H] */
  normConv: Uint16Array;
  /** conv1d.weight [n*H, 1, K] */
  conv: Uint16Array;
}

export interface PleShape extends PleHashParams {
  hidden: number;
  streams: number;
  embedDim: number;
  /** rows of the padded table */
  tableRows: number;
  convKernel: number;
  /** = ngramSize (the reference's dilation) */
  convDilation: number;
  eps: number;
}

/** Every stored value of the PLE, in the order the reference computes them. */
export interface PleResult {
  /** [T, heads] i32, offsets included */
  ids: Int32Array;
  /** [T, embedDim] */
  embedding: Uint16Array;
  /** [T, n*H] */
  key: Uint16Array;
  /** [T, H] */
  value: Uint16Array;
  keyNormed: Uint16Array;
  queryNormed: Uint16Array;
  /** [T, n] bf16 */
  gate: Uint16Array;
  /** [T, n*H] */
  gated: Uint16Array;
  gatedNormed: Uint16Array;
  /** [T, n*H]: the PLE's output (HF `Qwen4ExpTextPLELayer` returns this) */
  out: Uint16Array;
  /** [T, n*H]: the streams after the add, bf(X + out) (HF's decoder layer) */
  x: Uint16Array;
}

/**
 * The whole PLE layer on the streams X [T, n*H] (after the pending combine) and the token
 * ids [T]; `context` as in pleNgramIds (default: a fresh sequence). The oracle for the
 * graph's ops.
 */
export function pleForward(x: Uint16Array, tokens: Int32Array, shape: PleShape, w: PleWeightData, context?: Int32Array): PleResult {
  const T = tokens.length;
  const { hidden: H, streams: n, embedDim: D, eps } = shape;
  const heads = shape.vocabSizes.length;
  checkLength('streams', x, T * n * H);
  checkLength('n-gram table', w.table, shape.tableRows * (D / heads));
  const ids = pleNgramIds(tokens, shape, context);
  const embedding = pleNgramEmbed(ids, heads, w.table, D / heads);
  const e = bf16ArrayToF32(embedding);
  const key = linearBf16(e, bf16ArrayToF32(w.keyProj), T, D, n * H);
  const value = linearBf16(e, bf16ArrayToF32(w.valueProj), T, D, H);
  const keyNormed = pleRms1pNorm(key, T, n, H, w.normKey, eps);
  const queryNormed = pleRms1pNorm(x, T, n, H, w.normQuery, eps);
  const gate = pleGate(keyNormed, queryNormed, T, n, H);
  const gated = pleGatedValue(gate, value, T, n, H);
  const gatedNormed = pleRms1pNorm(gated, T, n, H, w.normConv, eps);
  const out = pleConvSilu(gatedNormed, gated, w.conv, T, n * H, shape.convKernel, shape.convDilation);
  const xOut = Uint16Array.from(x, (v, i) => f32ToBf16(fr(bf16ToF32(v) + bf16ToF32(out[i]))));
  return { ids, embedding, key, value, keyNormed, queryNormed, gate, gated, gatedNormed, out, x: xOut };
}
