import { bf16ArrayToF32, bf16ToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { rsqrtF32, sigmoidF32, siluF32, sqrtF32 } from '../../numerics/fp32Math.ts';
import { linearBf16 } from '../linearMath.ts';
import { pleNgramIds, type PleHashParams } from './pleHash.ts';

// PLE (model.md "PLE"), CPU reference on typed arrays, following DeepSeek's Engram module
// (the reference design: gate = sigmoid(signed_sqrt(<RMS(key), RMS(query)> / sqrt(H))),
// value = gate * value_proj(E), out = value + silu(conv(RMS(value)))). bf16 values travel
// as Uint16Array patterns; fp32 is emulated with Math.fround after every operation. Every
// activation between ops is stored in bf16 (as the HF modules store them: the norms' outputs,
// the gated value, the conv output, the silu); inside an op all is fp32.
const fr = Math.fround;

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`ple: ${what} has ${arr.length} values, expected ${expected}`);
}

/**
 * E[t] = concat over heads j of table_j[ids[t, j]]: the tables are stacked along rows
 * ([sum_j V_j, headDim], head 0 first), so head j's row r is stacked row offset_j + r.
 * Exact; an id outside its head's table is an error.
 */
export function pleNgramEmbed(ids: Int32Array, tables: Uint16Array, vocabSizes: readonly number[], headDim: number): Uint16Array {
  const heads = vocabSizes.length;
  if (ids.length % heads !== 0) throw new Error(`ple: ${ids.length} n-gram ids do not fill rows of ${heads} heads`);
  const offsets: number[] = [];
  let rows = 0;
  for (const v of vocabSizes) {
    offsets.push(rows);
    rows += v;
  }
  checkLength('stacked n-gram tables', tables, rows * headDim);
  const tokens = ids.length / heads;
  const e = new Uint16Array(tokens * heads * headDim);
  for (let t = 0; t < tokens; t++) {
    for (let j = 0; j < heads; j++) {
      const id = ids[t * heads + j];
      if (!(id >= 0 && id < vocabSizes[j])) throw new Error(`ple: n-gram id ${id} of head ${j} at position ${t} is outside its table [0, ${vocabSizes[j]})`);
      const src = (offsets[j] + id) * headDim;
      e.set(tables.subarray(src, src + headDim), (t * heads + j) * headDim);
    }
  }
  return e;
}

/**
 * Grouped RMS norm with a plain weight (torch nn.RMSNorm, as Engram's norms), per row and
 * group of `groupSize` columns: sumsq in fp32 over j in order (bf16 squares are exact),
 * rstd = 1/sqrt(sumsq/D + eps), y = bf(x * rstd * w), the two products rounded to fp32 in
 * that order. One rounding, as the HC's grouped norm.
 */
export function pleRmsNorm(x: Uint16Array, rows: number, groups: number, groupSize: number, weight: Uint16Array, eps: number): Uint16Array {
  const width = groups * groupSize;
  checkLength('norm input', x, rows * width);
  checkLength('norm weight', weight, width);
  const w = bf16ArrayToF32(weight);
  const epsF = fr(eps);
  const y = new Uint16Array(x.length);
  for (let t = 0; t < rows; t++) {
    for (let g = 0; g < groups; g++) {
      const base = t * width + g * groupSize;
      let sumsq = 0;
      for (let j = 0; j < groupSize; j++) {
        const v = bf16ToF32(x[base + j]);
        sumsq = fr(sumsq + v * v);
      }
      const rstd = rsqrtF32(fr(fr(sumsq / groupSize) + epsF));
      for (let j = 0; j < groupSize; j++) y[base + j] = f32ToBf16(fr(fr(bf16ToF32(x[base + j]) * rstd) * w[g * groupSize + j]));
    }
  }
  return y;
}

/** Engram's clamp in signed_sqrt: |score| below it is raised to it (sqrt stays away from 0's infinite slope). */
export const PLE_GATE_SQRT_FLOOR = fr(1e-6);

/**
 * Per row t and stream s: score = sum_j q[t,s,j] * k[t,j] (fp32, j in order; bf16 products
 * are exact), score = score / sqrt(H) (sqrt(H) rounded to fp32 once), gate = sigmoid(sign(score)
 * * sqrt(max(|score|, 1e-6))) (Engram: gate.abs().clamp_min(1e-6).sqrt() * gate.sign(),
 * so a zero score gives sigmoid(0) = 0.5). Output gate [T, n] in fp32, unrounded: it is
 * consumed inside the gated-value op, which rounds once.
 */
export function pleGate(qNormed: Uint16Array, kNormed: Uint16Array, rows: number, streams: number, hidden: number): Float32Array {
  checkLength('normed queries', qNormed, rows * streams * hidden);
  checkLength('normed keys', kNormed, rows * hidden);
  const sqrtH = sqrtF32(hidden);
  const gate = new Float32Array(rows * streams);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < streams; s++) {
      const qo = (t * streams + s) * hidden;
      let acc = 0;
      for (let j = 0; j < hidden; j++) acc = fr(acc + bf16ToF32(qNormed[qo + j]) * bf16ToF32(kNormed[t * hidden + j]));
      const score = fr(acc / sqrtH);
      const mag = sqrtF32(Math.max(Math.abs(score), PLE_GATE_SQRT_FLOOR));
      const signed = score > 0 ? mag : score < 0 ? -mag : 0;
      gate[t * streams + s] = sigmoidF32(signed);
    }
  }
  return gate;
}

/** G[t, s*H + j] = bf(gate[t,s] * value[t,j]): the value broadcast over the n streams. */
export function pleGatedValue(gate: Float32Array, value: Uint16Array, rows: number, streams: number, hidden: number): Uint16Array {
  checkLength('gate', gate, rows * streams);
  checkLength('value', value, rows * hidden);
  const g = new Uint16Array(rows * streams * hidden);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < streams; s++) {
      const gs = gate[t * streams + s];
      const o = (t * streams + s) * hidden;
      for (let j = 0; j < hidden; j++) g[o + j] = f32ToBf16(fr(gs * bf16ToF32(value[t * hidden + j])));
    }
  }
  return g;
}

/**
 * out = bf(G + bf(silu(bf(conv)))), conv the causal depthwise conv1d over time of the
 * normed values, per channel c (weight [C, 1, K] as [C, K]): conv[t,c] = sum_{i=0..K-1}
 * w[c,i] * Gn[t - (K-1-i)*dilation, c] (PyTorch Conv1d with left padding (K-1)*dilation
 * trimmed to T: tap i = K-1 is the current token), accumulated in fp32 in i order, taps
 * before the start are zeros (skipped: adding +0 to the accumulator changes nothing).
 */
export function pleConvSilu(gNormed: Uint16Array, g: Uint16Array, convWeight: Uint16Array, rows: number, channels: number, kernel: number, dilation: number): Uint16Array {
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

/** The PLE's weights as bf16 patterns (see pleWeights.ts for names and shapes). */
export interface PleWeightData {
  /** ngram_embeddings.{j}.weight [V_j, headDim] stacked along rows, head 0 first */
  tables: Uint16Array;
  /** key_proj.weight [H, embedDim] */
  keyProj: Uint16Array;
  /** value_proj.weight [H, embedDim] */
  valueProj: Uint16Array;
  /** key_norm.weight [H] */
  keyNorm: Uint16Array;
  /** query_norm.weight [n*H], one group per stream */
  queryNorm: Uint16Array;
  /** out_norm.weight [n*H], one group per stream */
  outNorm: Uint16Array;
  /** conv.weight [n*H, 1, K] */
  conv: Uint16Array;
}

export interface PleShape extends PleHashParams {
  hidden: number;
  streams: number;
  embedDim: number;
  convKernel: number;
  convDilation: number;
  eps: number;
}

/** Every stored value of the PLE, in the order the graph computes them. */
export interface PleResult {
  ids: Int32Array;
  embedding: Uint16Array;
  key: Uint16Array;
  value: Uint16Array;
  gate: Float32Array;
  gated: Uint16Array;
  /** [T, n*H]: the stack then does X = bf(X + out) */
  out: Uint16Array;
}

/** The PLE on streams X [T, n*H] (bf16) and token ids [T], op by op as pleGraph.ts wires it. */
export function pleForward(x: Uint16Array, tokens: Int32Array, shape: PleShape, w: PleWeightData): PleResult {
  const T = tokens.length;
  const { hidden: H, streams: n, embedDim: D, eps } = shape;
  checkLength('streams', x, T * n * H);
  const ids = pleNgramIds(tokens, shape);
  const embedding = pleNgramEmbed(ids, w.tables, shape.vocabSizes, D / shape.vocabSizes.length);
  const e = bf16ArrayToF32(embedding);
  const key = linearBf16(e, bf16ArrayToF32(w.keyProj), T, D, H);
  const value = linearBf16(e, bf16ArrayToF32(w.valueProj), T, D, H);
  const kNormed = pleRmsNorm(key, T, 1, H, w.keyNorm, eps);
  const qNormed = pleRmsNorm(x, T, n, H, w.queryNorm, eps);
  const gate = pleGate(qNormed, kNormed, T, n, H);
  const gated = pleGatedValue(gate, value, T, n, H);
  const gNormed = pleRmsNorm(gated, T, n, H, w.outNorm, eps);
  const out = pleConvSilu(gNormed, gated, w.conv, T, n * H, shape.convKernel, shape.convDilation);
  return { ids, embedding, key, value, gate, gated, out };
}
