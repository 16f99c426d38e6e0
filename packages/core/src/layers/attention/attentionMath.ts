import { bf16ArrayToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { expF32, rsqrtF32, sigmoidF32 } from '../../numerics/fp32Math.ts';

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

/**
 * Per-head Gemma-style RMS norm then NeoX RoPE on the first ropeDims dims.
 * Norm (HF Qwen3NextRMSNorm): n = bf( fr(x * rsqrt(mean(x^2) + eps)) * fr(1 + w) ), the
 * sum of squares in d order. Between the norm and RoPE the reference stores a bf16 tensor
 * (model.md is silent; HF and vLLM both round there). RoPE, half = ropeDims / 2, i < half:
 *   out[i]        = bf( fr(n[i] * cos) - fr(n[i+half] * sin) )
 *   out[i + half] = bf( fr(n[i+half] * cos) + fr(n[i] * sin) )
 * with fp32 cos/sin[t, i] given as inputs (ropeTables.ts), so no backend evaluates cos/sin.
 * Dims from ropeDims on pass the normed value through. Output [T, heads * headDim].
 */
export function attnHeadNormRope(
  x: Uint16Array,
  w: Uint16Array,
  cos: Float32Array,
  sin: Float32Array,
  tokens: number,
  layout: HeadLayout,
  ropeDims: number,
  eps: number,
): Uint16Array {
  const { heads, headDim: hd, stride, offset } = layout;
  if (offset + hd > stride) throw new Error(`attention: head at offset ${offset} with dim ${hd} overruns stride ${stride}`);
  if (ropeDims % 2 !== 0 || ropeDims > hd) throw new Error(`attention: ropeDims ${ropeDims} must be even and at most headDim ${hd}`);
  const half = ropeDims / 2;
  checkLength('x', x, tokens * heads * stride);
  checkLength('norm weight', w, hd);
  checkLength('cos', cos, tokens * half);
  checkLength('sin', sin, tokens * half);
  const xf = bf16ArrayToF32(x);
  const onePlusW = bf16ArrayToF32(w).map((v) => fr(1 + v));
  const epsF = fr(eps);
  const n = new Float32Array(hd);
  const y = new Uint16Array(tokens * heads * hd);
  for (let t = 0; t < tokens; t++) {
    for (let h = 0; h < heads; h++) {
      const xb = (t * heads + h) * stride + offset;
      let ss = 0;
      for (let d = 0; d < hd; d++) ss = fr(ss + xf[xb + d] * xf[xb + d]);
      const r = rsqrtF32(fr(fr(ss / hd) + epsF));
      for (let d = 0; d < hd; d++) n[d] = roundBf16(fr(xf[xb + d] * r) * onePlusW[d]);
      const yb = (t * heads + h) * hd;
      for (let i = 0; i < half; i++) {
        const c = cos[t * half + i];
        const s = sin[t * half + i];
        const x1 = n[i];
        const x2 = n[i + half];
        y[yb + i] = f32ToBf16(fr(x1 * c) - fr(x2 * s));
        y[yb + i + half] = f32ToBf16(fr(x2 * c) + fr(x1 * s));
      }
      for (let d = ropeDims; d < hd; d++) y[yb + d] = f32ToBf16(n[d]);
    }
  }
  return y;
}

/**
 * Causal softmax(q k^T * scale) v per query head, fp32, two-pass (not online) softmax.
 * Query head h reads KV head floor(h / (heads / kvHeads)) (GQA; per rank). For query t:
 *   s_j = fr(dot_d(q_t, k_j) * scale) for j = 0..t (dot in d order; bf16 products exact)
 *   m = max_j s_j;  p_j = exp(fr(s_j - m));  l = sum_j p_j (j order)
 *   o[d] = bf( fr( (sum_j fr(p_j * v_j[d]), j order) / l ) )
 * q [T, heads*hd], k and v [T, kvHeads*hd] -> o [T, heads*hd].
 */
export function attnCausal(q: Uint16Array, k: Uint16Array, v: Uint16Array, tokens: number, heads: number, kvHeads: number, headDim: number, scale: number): Uint16Array {
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
  const p = new Float32Array(tokens);
  const acc = new Float32Array(hd);
  const o = new Uint16Array(tokens * heads * hd);
  for (let h = 0; h < heads; h++) {
    const kvh = Math.floor(h / group);
    for (let t = 0; t < tokens; t++) {
      const qb = (t * heads + h) * hd;
      let m = -Infinity;
      for (let j = 0; j <= t; j++) {
        const kb = (j * kvHeads + kvh) * hd;
        let dot = 0;
        for (let d = 0; d < hd; d++) dot = fr(dot + qf[qb + d] * kf[kb + d]);
        p[j] = fr(dot * scaleF);
        if (p[j] > m) m = p[j];
      }
      let l = 0;
      for (let j = 0; j <= t; j++) {
        p[j] = expF32(fr(p[j] - m));
        l = fr(l + p[j]);
      }
      acc.fill(0);
      for (let j = 0; j <= t; j++) {
        const vb = (j * kvHeads + kvh) * hd;
        for (let d = 0; d < hd; d++) acc[d] = fr(acc[d] + fr(p[j] * vf[vb + d]));
      }
      for (let d = 0; d < hd; d++) o[qb + d] = f32ToBf16(fr(acc[d] / l));
    }
  }
  return o;
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
