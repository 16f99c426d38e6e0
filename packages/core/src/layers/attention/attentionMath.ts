import { bf16ArrayToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { canonicalSumF32 } from '../../numerics/canonicalSum.ts';
import { expF32, rsqrtF32, sigmoidF32 } from '../../numerics/fp32Math.ts';
import { checkQsaSelection, qsaKeptPositions, type QsaSelection } from './qsaSelection.ts';

// Gated full attention (model.md "Full attention"), CPU reference on typed arrays. bf16
// values travel as Uint16Array bit patterns; fp32 is emulated with Math.fround after every
// operation; a product of two non-bf16 fp32 values is rounded before it is added (no fused
// multiply-add), so a WGSL kernel with separate `*` and `+` in the same order matches bit
// for bit. Head counts here are per rank (TP-local).
const fr = Math.fround;

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`attention: ${what} has ${arr.length} values, expected ${expected}`);
}

export interface HeadLayout {
  heads: number;
  headDim: number;
  /** columns between the starts of consecutive heads in the input row */
  stride: number;
  /** column of head 0's first value (q_proj interleaves [query | gate] per head) */
  offset: number;
}

function checkHeadLayout(layout: HeadLayout, ropeDims: number): void {
  const { headDim: hd, stride, offset } = layout;
  if (offset + hd > stride) throw new Error(`attention: head at offset ${offset} with dim ${hd} overruns stride ${stride}`);
  if (ropeDims % 2 !== 0 || ropeDims > hd) throw new Error(`attention: ropeDims ${ropeDims} must be even and at most headDim ${hd}`);
}

/**
 * One head of HF Qwen4ExpTextRMSNorm (RMS1p) into n: ss = sum_d x^2 in fp32 in canonical
 * reduction order v1 (numerics/canonicalSum.ts; bf16 squares are exact, so each add is one
 * rounding), then n[d] = bf( fr(x * rsqrt(fr(ss / hd) + eps)) * fr(1 + w) ). The reference
 * returns bf16 (`type_as(x)`), which is what RoPE then reads.
 */
function rmsNorm1pHead(xf: Float32Array, base: number, hd: number, onePlusW: Float32Array, epsF: number, n: Float32Array): void {
  const ss = canonicalSumF32(hd, (d) => xf[base + d] * xf[base + d]);
  const r = rsqrtF32(fr(fr(ss / hd) + epsF));
  for (let d = 0; d < hd; d++) n[d] = roundBf16(fr(xf[base + d] * r) * onePlusW[d]);
}

/** Row r of a RoPE input sits at position start + r * step (step = compress ratio for QSA block keys). */
export interface RopePositions {
  start: number;
  step: number;
}

/**
 * Per-head RMS1p norm (the sum of squares in canonical order v1), then NeoX RoPE on the first ropeDims dims rounded as HF's
 * apply_rotary_pos_emb in bf16 and ATOM's _qsa_mrope_kernel do it: with c, s the bf16
 * table entries of the row's position (ropeTablesBf16) and half = ropeDims / 2, i < half,
 *   out[i]        = bf( bf(n[i] * c) + bf(-n[i+half] * s) )
 *   out[i + half] = bf( bf(n[i+half] * c) + bf(n[i] * s) )
 * (rotate_half is cat(-x2, x1); the table's two halves are equal). Dims from ropeDims on
 * pass the normed value through. x [rows, heads * stride]; cos, sin bf16 [P, half] with
 * every row's position below P. Output [rows, heads * headDim].
 */
export function attnHeadNormRopeBf16(
  x: Uint16Array,
  w: Uint16Array,
  cos: Uint16Array,
  sin: Uint16Array,
  rows: number,
  layout: HeadLayout,
  ropeDims: number,
  eps: number,
  positions: RopePositions,
): Uint16Array {
  const { heads, headDim: hd, stride, offset } = layout;
  checkHeadLayout(layout, ropeDims);
  const half = ropeDims / 2;
  checkLength('x', x, rows * heads * stride);
  checkLength('norm weight', w, hd);
  const { start, step } = positions;
  if (!Number.isInteger(start) || !Number.isInteger(step) || start < 0 || step < 0) {
    throw new Error(`attention: RoPE positions start ${start}, step ${step} must be non-negative integers`);
  }
  if (half > 0) {
    if (cos.length !== sin.length || cos.length % half !== 0)
      throw new Error(`attention: cos/sin tables of ${cos.length}/${sin.length} values are not [P, ${half}]`);
    const last = start + (rows - 1) * step;
    if (rows > 0 && last >= cos.length / half) throw new Error(`attention: position ${last} is past the ${cos.length / half}-position RoPE table`);
  }
  const xf = bf16ArrayToF32(x);
  const cf = bf16ArrayToF32(cos);
  const sf = bf16ArrayToF32(sin);
  const onePlusW = bf16ArrayToF32(w).map((v) => fr(1 + v));
  const epsF = fr(eps);
  const n = new Float32Array(hd);
  const y = new Uint16Array(rows * heads * hd);
  for (let r = 0; r < rows; r++) {
    const tb = (start + r * step) * half;
    for (let h = 0; h < heads; h++) {
      rmsNorm1pHead(xf, (r * heads + h) * stride + offset, hd, onePlusW, epsF, n);
      const yb = (r * heads + h) * hd;
      for (let i = 0; i < half; i++) {
        const c = cf[tb + i];
        const s = sf[tb + i];
        const x1 = n[i];
        const x2 = n[i + half];
        // bf16 x bf16 is exact in float64; roundBf16 rounds to fp32, then to bf16
        y[yb + i] = f32ToBf16(roundBf16(x1 * c) + roundBf16(-x2 * s));
        y[yb + i + half] = f32ToBf16(roundBf16(x2 * c) + roundBf16(x1 * s));
      }
      for (let d = ropeDims; d < hd; d++) y[yb + d] = f32ToBf16(n[d]);
    }
  }
  return y;
}

/**
 * softmax(q k^T * scale) v per query head over the keys keysOf(t) lists for query row t
 * (ascending positions), fp32, two-pass (not online) softmax. Query head h reads KV head
 * floor(h / (heads / kvHeads)) (GQA; per rank). For query t with keys j in list order:
 *   s_j = fr(dot_d(q_t, k_j) * scale) (dot in d order; bf16 products exact)
 *   m = max_j s_j (order-free);  p_j = exp(fr(s_j - m))
 *   l = sum_j p_j in canonical reduction order v1 over the terms p_0..p_{n-1} (list order
 *       numbers them; numerics/canonicalSum.ts)
 *   o[d] = bf( fr( (sum_j fr(p_j * v_j[d]), list order) / l ) )
 * The dots and the value sums are GEMM-like: each keeps its sequential order.
 * `eagerSoftmax` (the 'hf-eager' contract) follows HF's eager_attention_forward on bf16
 * tensors: matmul(q, k^T) stores bf16 and `* scaling` stores bf16 again, softmax(dtype=float32)
 * multiplies by the reciprocal of the sum (torch's CPU softmax) and .to(bf16) stores p:
 *   s_j = bf(fr(bf(dot_j) * scale)); p_j = exp(fr(s_j - m)) as above, l as above;
 *   p_j = bf(fr(p_j * fr(1 / l)));  o[d] = bf( sum_j fr(p_j * v_j[d]), list order ) (no division)
 */
function attnOverKeys(
  q: Uint16Array,
  k: Uint16Array,
  v: Uint16Array,
  tokens: number,
  heads: number,
  kvHeads: number,
  headDim: number,
  scale: number,
  keysOf: (t: number, out: Int32Array) => number,
  eagerSoftmax = false,
): Uint16Array {
  if (heads % kvHeads !== 0) throw new Error(`attention: heads ${heads} are not a multiple of KV heads ${kvHeads}`);
  const hd = headDim;
  checkLength('q', q, tokens * heads * hd);
  checkLength('k', k, tokens * kvHeads * hd);
  checkLength('v', v, tokens * kvHeads * hd);
  const group = heads / kvHeads;
  const scaleF = fr(scale);
  const qf = bf16ArrayToF32(q);
  const kf = bf16ArrayToF32(k);
  const vf = bf16ArrayToF32(v);
  const keys = new Int32Array(tokens);
  const p = new Float32Array(tokens);
  const acc = new Float32Array(hd);
  const o = new Uint16Array(tokens * heads * hd);
  for (let t = 0; t < tokens; t++) {
    const n = keysOf(t, keys);
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / group);
      const qb = (t * heads + h) * hd;
      let m = -Infinity;
      for (let i = 0; i < n; i++) {
        const kb = (keys[i] * kvHeads + kvh) * hd;
        let dot = 0;
        for (let d = 0; d < hd; d++) dot = fr(dot + qf[qb + d] * kf[kb + d]);
        p[i] = eagerSoftmax ? roundBf16(fr(roundBf16(dot) * scaleF)) : fr(dot * scaleF);
        if (p[i] > m) m = p[i];
      }
      for (let i = 0; i < n; i++) p[i] = expF32(fr(p[i] - m));
      const l = canonicalSumF32(n, (i) => p[i]);
      if (eagerSoftmax) {
        const r = fr(1 / l);
        for (let i = 0; i < n; i++) p[i] = roundBf16(fr(p[i] * r));
      }
      acc.fill(0);
      for (let i = 0; i < n; i++) {
        const vb = (keys[i] * kvHeads + kvh) * hd;
        for (let d = 0; d < hd; d++) acc[d] = fr(acc[d] + fr(p[i] * vf[vb + d]));
      }
      for (let d = 0; d < hd; d++) o[qb + d] = f32ToBf16(eagerSoftmax ? acc[d] : fr(acc[d] / l));
    }
  }
  return o;
}

/**
 * Dense causal attention: query t attends to keys 0..t (attnOverKeys' recipe).
 * q [T, heads*hd], k and v [T, kvHeads*hd] -> o [T, heads*hd].
 */
export function attnCausal(
  q: Uint16Array,
  k: Uint16Array,
  v: Uint16Array,
  tokens: number,
  heads: number,
  kvHeads: number,
  headDim: number,
  scale: number,
): Uint16Array {
  return attnOverKeys(q, k, v, tokens, heads, kvHeads, headDim, scale, (t, out) => {
    for (let j = 0; j <= t; j++) out[j] = j;
    return t + 1;
  });
}

/**
 * QSA attention: query t attends to the keys the indexer kept for it (qsaSelection.ts),
 * in ascending position order, with attnCausal's recipe; so when nothing is dropped
 * (every row has at most `width` complete blocks) it equals attnCausal bit for bit.
 * The selection covers rows 0..T-1 (positions = rows: a prefill from an empty cache).
 */
export function attnCausalQsa(
  q: Uint16Array,
  k: Uint16Array,
  v: Uint16Array,
  tokens: number,
  heads: number,
  kvHeads: number,
  headDim: number,
  scale: number,
  selection: QsaSelection,
  eagerSoftmax = false,
): Uint16Array {
  checkQsaSelection(selection);
  if (selection.r0 !== 0 || selection.rows !== tokens) {
    throw new Error(`attention: the QSA selection covers rows [${selection.r0}, ${selection.r0 + selection.rows}), expected [0, ${tokens})`);
  }
  return attnOverKeys(q, k, v, tokens, heads, kvHeads, headDim, scale, (t, out) => qsaKeptPositions(selection, t, out), eagerSoftmax);
}

/**
 * Output gate: y = bf(o * bf(sigmoid(gate))), the gate being columns [hd, 2hd) of each
 * head's [query | gate] block of the q_proj output qg [T, heads * 2hd].
 */
export function attnOutputGate(o: Uint16Array, qg: Uint16Array, tokens: number, heads: number, headDim: number): Uint16Array {
  const hd = headDim;
  checkLength('o', o, tokens * heads * hd);
  checkLength('query-gate', qg, tokens * heads * 2 * hd);
  const of = bf16ArrayToF32(o);
  const gf = bf16ArrayToF32(qg);
  const y = new Uint16Array(o.length);
  for (let th = 0; th < tokens * heads; th++) {
    for (let d = 0; d < hd; d++) {
      const gate = roundBf16(sigmoidF32(gf[th * 2 * hd + hd + d]));
      y[th * hd + d] = f32ToBf16(of[th * hd + d] * gate);
    }
  }
  return y;
}
