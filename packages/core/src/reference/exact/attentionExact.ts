import type { ModelConfig } from '../../config/modelConfig.ts';
import { qsaKeptPositions, qsaVisibleBlocks } from '../../layers/attention/qsaSelection.ts';
import { torchCpuTopk, topkTiesOf } from '../../numerics/topkTies.ts';
import type { HeadLayout } from '../../layers/attention/attentionMath.ts';
import type { F64Tensor, I32Tensor } from './exactInputs.ts';
import { headLayoutAttrs, numAttrs } from '../kernels/kernelArgs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

// Float64 kernels of the full-attention and QSA ops (graph/ops/attentionOps.ts): the math
// of layers/attention/{attentionMath,qsaIndexer,qsaSelection}.ts line by line in plain
// double arithmetic, with none of its roundings (no Math.fround, no bf16 rounding of the
// normed values, of the RoPE products and sums, of the pooled block keys or of the outputs;
// expF32/sigmoidF32 -> Math.exp; rsqrtF32 -> 1 / Math.sqrt). The algorithm stays: RMS1p
// with the same eps, NeoX RoPE on the first ropeDims dims, the causal QSA key sets, the
// two-pass softmax. Discrete decisions (qsaSelect's top-k blocks) are made on the float64
// scores with the reference's tie rule (ties to the lower block index, or the op's `ties`
// 'torch-cpu' rule, numerics/topkTies.ts; listed ascending).
//
// RoPE: the reference reads bf16 cos/sin tables (model.md, the HF recipe: ropeTablesBf16
// rounds fr(cos(fr(pos * inv_freq_f32))) to bf16). These kernels use whatever table values
// they are given, as float64; the exact evaluation feeds them ropeTablesExact below, the
// float64 cos/sin of the float64 inv_freq * position, so the tables' rounding is not in the
// exact value. (Given the widened bf16 tables instead, everything else is still exact.)

/**
 * Float64 RoPE tables [tokens, ropeDims/2] for positions 0..tokens-1: inv_freq[i] =
 * theta^(-2i/ropeDims) and angle = pos * inv_freq[i] in float64, cos/sin by Math.cos/sin
 * (under one float64 ulp). Declared bf16, as the graph's rope_cos / rope_sin inputs are.
 */
export function ropeTablesExact(config: ModelConfig, tokens: number): { cos: ExactTensor; sin: ExactTensor } {
  if (!Number.isInteger(tokens) || tokens <= 0) throw new Error(`ropeTablesExact: tokens must be a positive integer, got ${tokens}`);
  const { ropeDims, ropeTheta } = config.attention;
  if (!Number.isInteger(ropeDims) || ropeDims <= 0 || ropeDims % 2 !== 0)
    throw new Error(`ropeTablesExact: ropeDims must be a positive even integer, got ${ropeDims}`);
  const half = ropeDims / 2;
  const cos = new Float64Array(tokens * half);
  const sin = new Float64Array(tokens * half);
  for (let i = 0; i < half; i++) {
    const invFreq = 1 / ropeTheta ** ((2 * i) / ropeDims);
    for (let pos = 0; pos < tokens; pos++) {
      cos[pos * half + i] = Math.cos(pos * invFreq);
      sin[pos * half + i] = Math.sin(pos * invFreq);
    }
  }
  return { cos: { dtype: 'bf16', shape: [tokens, half], data: cos }, sin: { dtype: 'bf16', shape: [tokens, half], data: sin } };
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * attnHeadNormRopeBf16's math without its roundings: per head n = x * rsqrt(mean(x^2) +
 * eps) * (1 + w), then out[i] = n[i] c - n[i+half] s, out[i+half] = n[i+half] c + n[i] s
 * with row r's cos/sin at table row start + r * step; dims from ropeDims on are n.
 */
function headNormRope(
  x: Float64Array,
  w: Float64Array,
  cos: Float64Array,
  sin: Float64Array,
  rows: number,
  layout: HeadLayout,
  ropeDims: number,
  eps: number,
  step: number,
): Float64Array {
  const { heads, headDim: hd, stride, offset } = layout;
  const half = ropeDims / 2;
  const n = new Float64Array(hd);
  const y = new Float64Array(rows * heads * hd);
  for (let r = 0; r < rows; r++) {
    const tb = r * step * half;
    for (let h = 0; h < heads; h++) {
      const base = (r * heads + h) * stride + offset;
      let ss = 0;
      for (let d = 0; d < hd; d++) ss += x[base + d] * x[base + d];
      const rs = 1 / Math.sqrt(ss / hd + eps);
      for (let d = 0; d < hd; d++) n[d] = x[base + d] * rs * (1 + w[d]);
      const yb = (r * heads + h) * hd;
      for (let i = 0; i < half; i++) {
        const c = cos[tb + i];
        const s = sin[tb + i];
        y[yb + i] = n[i] * c - n[i + half] * s;
        y[yb + i + half] = n[i + half] * c + n[i] * s;
      }
      for (let d = ropeDims; d < hd; d++) y[yb + d] = n[d];
    }
  }
  return y;
}

export const attentionExact: ExactKernelTable = {
  perRank: {
    attnHeadNormRopeBf16: (inputs, attrs) => {
      const layout = headLayoutAttrs(attrs);
      const { ropeDims, eps } = numAttrs(attrs);
      const [x, w, cos, sin] = inputs as F64Tensor[];
      const rows = x.shape[0];
      const y = headNormRope(x.data, w.data, cos.data, sin.data, rows, layout, ropeDims, eps, 1);
      return [{ dtype: 'bf16', shape: [rows, layout.heads * layout.headDim], data: y }];
    },
    // pooled_b = (sum of rows b*ratio .. b*ratio+ratio-1) / ratio, then RMS1p and RoPE at position b*ratio
    qsaBlockKeys: (inputs, attrs) => {
      const { headDim: hd, compressRatio: ratio, ropeDims, eps } = numAttrs(attrs);
      const [kRaw, w, cos, sin] = inputs as F64Tensor[];
      const T = kRaw.shape[0];
      const nb = Math.floor(T / ratio);
      const pooled = new Float64Array(nb * hd);
      for (let b = 0; b < nb; b++) {
        for (let c = 0; c < hd; c++) {
          let sum = 0;
          for (let j = 0; j < ratio; j++) sum += kRaw.data[(b * ratio + j) * hd + c];
          pooled[b * hd + c] = sum / ratio;
        }
      }
      const kb = headNormRope(pooled, w.data, cos.data, sin.data, nb, { heads: 1, headDim: hd, stride: hd, offset: 0 }, ropeDims, eps, ratio);
      return [{ dtype: 'bf16', shape: [nb, hd], data: kb }];
    },
    qsaKeptCount: (inputs, attrs) => {
      const ratio = numAttrs(attrs).compressRatio;
      const blocks = inputs[0] as I32Tensor;
      const [rows, width] = blocks.shape;
      const kept = new Int32Array(rows);
      for (let t = 0; t < rows; t++) {
        let listed = 0;
        for (let i = 0; i < width; i++) if (blocks.data[t * width + i] >= 0) listed++;
        kept[t] = listed * ratio + (t + 1 - Math.floor((t + 1) / ratio) * ratio);
      }
      return [{ dtype: 'i32', shape: [rows], data: kept }];
    },
    // score_b = sum_h relu(dot(q_h, kb_b)) / sqrt(headDim) over the row's visible blocks; the
    // top min(width, visible) (ties to the lower index), ascending, then -1; rows at or past
    // the last token (sequence-parallel padding) select nothing
    qsaSelect: (inputs, attrs) => {
      const op = 'qsaSelect';
      const { r0, tokens, nHeads: nh, headDim: hd, compressRatio: ratio, width } = numAttrs(attrs);
      const [q, kb] = inputs as F64Tensor[];
      const rows = q.shape[0];
      const nb = kb.shape[0];
      const real = Math.max(0, Math.min(rows, tokens - r0));
      const divisor = Math.sqrt(hd);
      const torchTies = topkTiesOf(attrs) === 'torch-cpu';
      const blocks = new Int32Array(rows * width).fill(-1);
      const scores = new Float64Array(nb);
      for (let r = 0; r < real; r++) {
        // at most nb: row r0 + r is before the last token and kb holds floor(tokens / ratio) blocks
        const visible = qsaVisibleBlocks(r0 + r, ratio);
        const out = blocks.subarray(r * width, (r + 1) * width);
        if (visible <= width) {
          for (let b = 0; b < visible; b++) out[b] = b;
          continue;
        }
        for (let b = 0; b < visible; b++) {
          let score = 0;
          for (let h = 0; h < nh; h++) {
            const qb = (r * nh + h) * hd;
            let dot = 0;
            for (let c = 0; c < hd; c++) dot += q.data[qb + c] * kb.data[b * hd + c];
            score += Math.max(dot, 0);
          }
          scores[b] = score / divisor;
        }
        const row = scores.subarray(0, visible);
        for (let b = 0; b < visible; b++) if (Number.isNaN(row[b])) throw new Error(`${op}: row ${r0 + r} block ${b} scored NaN`);
        if (torchTies) {
          out.set(torchCpuTopk(row, width).sort());
          continue;
        }
        // the reference's rule: threshold = the width-th largest score; everything above it,
        // then the lowest-index blocks equal to it until width are taken
        const threshold = Float64Array.from(row).sort()[visible - width];
        let above = 0;
        for (let b = 0; b < visible; b++) if (row[b] > threshold) above++;
        let ties = width - above;
        let n = 0;
        for (let b = 0; b < visible; b++) if (row[b] > threshold || (row[b] === threshold && ties-- > 0)) out[n++] = b;
      }
      return [{ dtype: 'i32', shape: [rows, width], data: blocks }];
    },
    // o = softmax(q k^T * scale) v per query head over row t's kept keys (ascending), GQA
    // h -> h / (heads / kvHeads); two-pass: m = max s_j, p_j = exp(s_j - m), o = sum p_j v_j / sum p_j
    attnCausalQsa: (inputs, attrs) => {
      const { heads, kvHeads, headDim: hd, width, scale, compressRatio } = numAttrs(attrs);
      const [q, k, v] = inputs as F64Tensor[];
      const blocks = inputs[3] as I32Tensor;
      const T = q.shape[0];
      const group = heads / kvHeads;
      const selection = { r0: 0, rows: T, width, compressRatio, blocks: blocks.data };
      const keys = new Int32Array(T);
      const p = new Float64Array(T);
      const acc = new Float64Array(hd);
      const o = new Float64Array(T * heads * hd);
      for (let t = 0; t < T; t++) {
        const n = qsaKeptPositions(selection, t, keys);
        for (let h = 0; h < heads; h++) {
          const kvh = Math.floor(h / group);
          const qb = (t * heads + h) * hd;
          let m = -Infinity;
          for (let i = 0; i < n; i++) {
            const kb = (keys[i] * kvHeads + kvh) * hd;
            let dot = 0;
            for (let d = 0; d < hd; d++) dot += q.data[qb + d] * k.data[kb + d];
            p[i] = dot * scale;
            if (p[i] > m) m = p[i];
          }
          let l = 0;
          for (let i = 0; i < n; i++) {
            p[i] = Math.exp(p[i] - m);
            l += p[i];
          }
          acc.fill(0);
          for (let i = 0; i < n; i++) {
            const vb = (keys[i] * kvHeads + kvh) * hd;
            for (let d = 0; d < hd; d++) acc[d] += p[i] * v.data[vb + d];
          }
          for (let d = 0; d < hd; d++) o[qb + d] = acc[d] / l;
        }
      }
      return [{ dtype: 'bf16', shape: [T, heads * hd], data: o }];
    },
    // y = o * sigmoid(gate), gate = columns [headDim, 2 headDim) of each head block of qg
    attnOutputGate: (inputs, attrs) => {
      const { heads, headDim: hd } = numAttrs(attrs);
      const [o, qg] = inputs as F64Tensor[];
      const T = o.shape[0];
      const y = new Float64Array(T * heads * hd);
      for (let th = 0; th < T * heads; th++) {
        for (let d = 0; d < hd; d++) y[th * hd + d] = o.data[th * hd + d] * sigmoid(qg.data[th * 2 * hd + hd + d]);
      }
      return [{ dtype: 'bf16', shape: [T, heads * hd], data: y }];
    },
  },
};
