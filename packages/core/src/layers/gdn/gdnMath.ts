import { bf16ArrayToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { canonicalSumF32 } from '../../numerics/canonicalSum.ts';
import { expF32, rsqrtF32, sigmoidF32, siluF32, softplusF32 } from '../../numerics/fp32Math.ts';

// GatedDeltaNet (model.md "Linear attention (GatedDeltaNet)"), CPU reference on typed
// arrays. bf16 values travel as Uint16Array bit patterns; fp32 is emulated with Math.fround
// after every operation, and every product of two non-bf16 fp32 values is rounded before it
// is added (no fused multiply-add), so a WGSL kernel written as separate `a * b` and `+`
// in the same order gives the same bits. Head counts here are per rank (TP-local).
const fr = Math.fround;

/** HF's l2norm eps (fla `l2norm`, transformers `l2norm(x, eps=1e-6)`). */
export const GDN_L2NORM_EPS = 1e-6;

export interface GdnHeads {
  keyHeads: number;
  valueHeads: number;
  keyDim: number;
  valueDim: number;
}

/** Channels of the [q | k | v] projection: 2 * keyHeads * keyDim + valueHeads * valueDim. */
export function gdnQkvChannels(h: GdnHeads): number {
  return 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
}

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`gdn: ${what} has ${arr.length} values, expected ${expected}`);
}

/**
 * Causal depthwise conv1d + silu, fused as causal_conv1d_fn(activation="silu") does:
 * y[t,c] = bf(silu(acc)), acc = sum_{j=0..K-1} w[c,j] * x[t-K+1+j, c] accumulated in fp32
 * in j order, rows before the start are zeros (or `history`, the K-1 rows that precede
 * row 0, oldest first, for a continuation). Model.md does not place a rounding between
 * the conv and the silu; the fused kernel HF calls keeps it in fp32, so one rounding.
 * `roundConv` (the 'hf-eager' contract): HF's torch fallback (causal_conv1d_fn without the
 * kernel) stores F.conv1d's bf16 output and applies ACT2FN to it, so bf(silu(bf(acc))).
 * w is the checkpoint's [C, 1, K] flattened to [C, K].
 */
export function gdnConvSilu(
  x: Uint16Array,
  w: Uint16Array,
  tokens: number,
  channels: number,
  kernel: number,
  history?: Uint16Array,
  roundConv = false,
): Uint16Array {
  checkLength('conv input', x, tokens * channels);
  checkLength('conv weight', w, channels * kernel);
  const past = kernel - 1;
  if (history) checkLength('conv history', history, past * channels);
  // rows [0, past) are the history (zeros from a fresh start), then the tokens
  const rows = new Float32Array((past + tokens) * channels);
  if (history) rows.set(bf16ArrayToF32(history), 0);
  rows.set(bf16ArrayToF32(x), past * channels);
  const wf = bf16ArrayToF32(w);
  const y = new Uint16Array(tokens * channels);
  for (let t = 0; t < tokens; t++) {
    for (let c = 0; c < channels; c++) {
      let acc = 0;
      // bf16 x bf16 products are exact in fp32: only the order of the adds matters
      for (let j = 0; j < kernel; j++) acc = fr(acc + wf[c * kernel + j] * rows[(t + j) * channels + c]);
      y[t * channels + c] = f32ToBf16(siluF32(roundConv ? roundBf16(acc) : acc));
    }
  }
  return y;
}

/**
 * The per-token, per-value-head gates, as HF computes them from bf16 b and a:
 * beta = bf(sigmoid(b)) (torch's bf16 sigmoid: fp32 inside, one rounding);
 * g = (-exp(A_log)) * softplus(a + dt_bias), all fp32, kept in fp32 (log-decay).
 */
export function gdnGates(
  b: Uint16Array,
  a: Uint16Array,
  aLog: Uint16Array,
  dtBias: Uint16Array,
  tokens: number,
  heads: number,
): { g: Float32Array; beta: Uint16Array } {
  checkLength('b', b, tokens * heads);
  checkLength('a', a, tokens * heads);
  checkLength('A_log', aLog, heads);
  checkLength('dt_bias', dtBias, heads);
  const bf = bf16ArrayToF32(b);
  const af = bf16ArrayToF32(a);
  const negA = bf16ArrayToF32(aLog).map((v) => -expF32(v));
  const dt = bf16ArrayToF32(dtBias);
  const g = new Float32Array(tokens * heads);
  const beta = new Uint16Array(tokens * heads);
  for (let i = 0; i < tokens * heads; i++) {
    const h = i % heads;
    g[i] = fr(negA[h] * softplusF32(fr(af[i] + dt[h])));
    beta[i] = f32ToBf16(sigmoidF32(bf[i]));
  }
  return { g, beta };
}

/**
 * l2-normalize `n` values of `src` at `off` into `dst` and multiply by `scale`:
 * dst[i] = fr(fr(src[i] * rsqrt(sum_i src[i]^2 + eps)) * scale), the sum in fp32 in canonical
 * reduction order v1 (numerics/canonicalSum.ts; the values are bf16, so each square is exact
 * and each add one rounding).
 */
function l2NormScaled(src: Float32Array, off: number, n: number, eps: number, scale: number, dst: Float32Array): void {
  const ss = canonicalSumF32(n, (i) => src[off + i] * src[off + i]);
  const r = rsqrtF32(fr(ss + eps));
  for (let i = 0; i < n; i++) dst[i] = fr(fr(src[off + i] * r) * scale);
}

/**
 * The gated delta rule, recurrent form (fla fused_recurrent_gated_delta_rule with
 * use_qk_l2norm_in_kernel), per value head h with key head h / (valueHeads / keyHeads):
 *   q, k = l2norm(q), l2norm(k) (fp32, eps 1e-6); q *= scale
 *   S = exp(g) S;  u_j = sum_i S_ij k_i;  S_ij += k_i * (beta (v_j - u_j));  o_j = bf(sum_i S_ij q_i)
 * S is fp32 [keyDim, valueDim] per head, from zero or from `state` ([valueHeads, keyDim,
 * valueDim], carried from an earlier call). The l2 norms' sums of squares run in canonical
 * reduction order v1; the state products (u_j, o_j: GEMM-like) over i = 0..keyDim-1 in order.
 * qkv is the conv output [T, C] laid out [q | k | v], head-contiguous.
 * Returns o [T, valueHeads * valueDim] (bf16) and the state after the last token.
 */
export function gdnRecurrence(
  qkv: Uint16Array,
  g: Float32Array,
  beta: Uint16Array,
  tokens: number,
  heads: GdnHeads,
  scale: number,
  eps: number,
  state?: Float32Array,
): { o: Uint16Array; state: Float32Array } {
  const { keyHeads, valueHeads, keyDim: dk, valueDim: dv } = heads;
  if (valueHeads % keyHeads !== 0) throw new Error(`gdn: value heads ${valueHeads} are not a multiple of key heads ${keyHeads}`);
  const channels = gdnQkvChannels(heads);
  checkLength('qkv', qkv, tokens * channels);
  checkLength('g', g, tokens * valueHeads);
  checkLength('beta', beta, tokens * valueHeads);
  const S = new Float32Array(valueHeads * dk * dv);
  if (state) {
    checkLength('state', state, S.length);
    S.set(state);
  }
  const group = valueHeads / keyHeads;
  const epsF = fr(eps);
  const scaleF = fr(scale);
  const x = bf16ArrayToF32(qkv);
  const betaF = bf16ArrayToF32(beta);
  const kOff = keyHeads * dk;
  const vOff = 2 * keyHeads * dk;
  const qn = new Float32Array(keyHeads * dk);
  const kn = new Float32Array(keyHeads * dk);
  const tmp = new Float32Array(dk);
  const delta = new Float32Array(dv);
  const o = new Uint16Array(tokens * valueHeads * dv);
  for (let t = 0; t < tokens; t++) {
    const row = t * channels;
    for (let kh = 0; kh < keyHeads; kh++) {
      l2NormScaled(x, row + kh * dk, dk, epsF, scaleF, tmp);
      qn.set(tmp, kh * dk);
      l2NormScaled(x, row + kOff + kh * dk, dk, epsF, 1, tmp);
      kn.set(tmp, kh * dk);
    }
    for (let h = 0; h < valueHeads; h++) {
      const kb = Math.floor(h / group) * dk;
      const sb = h * dk * dv;
      const decay = expF32(g[t * valueHeads + h]);
      const b = betaF[t * valueHeads + h];
      const vb = row + vOff + h * dv;
      for (let i = 0; i < dk * dv; i++) S[sb + i] = fr(S[sb + i] * decay);
      for (let j = 0; j < dv; j++) {
        let u = 0;
        for (let i = 0; i < dk; i++) u = fr(u + fr(S[sb + i * dv + j] * kn[kb + i]));
        delta[j] = fr(b * fr(x[vb + j] - u));
      }
      for (let i = 0; i < dk; i++) {
        const ki = kn[kb + i];
        for (let j = 0; j < dv; j++) S[sb + i * dv + j] = fr(S[sb + i * dv + j] + fr(ki * delta[j]));
      }
      for (let j = 0; j < dv; j++) {
        let acc = 0;
        for (let i = 0; i < dk; i++) acc = fr(acc + fr(S[sb + i * dv + j] * qn[kb + i]));
        o[(t * valueHeads + h) * dv + j] = f32ToBf16(acc);
      }
    }
  }
  return { o, state: S };
}

/**
 * Gated RMS norm per value head, with model.md's roundings and sigmoid gate:
 * y = bf( bf( bf(o * rsqrt(mean(o^2) + eps)) * w ) * sigmoid(z) ), mean = fr(sum_j o_j^2 / dv)
 * with the sum in fp32 in canonical reduction order v1 (bf16 squares are exact); w is a plain
 * weight (not 1 + w).
 */
export function gdnGatedNorm(o: Uint16Array, z: Uint16Array, w: Uint16Array, tokens: number, heads: number, headDim: number, eps: number): Uint16Array {
  const n = tokens * heads * headDim;
  checkLength('o', o, n);
  checkLength('z', z, n);
  checkLength('norm weight', w, headDim);
  const of = bf16ArrayToF32(o);
  const zf = bf16ArrayToF32(z);
  const wf = bf16ArrayToF32(w);
  const epsF = fr(eps);
  const y = new Uint16Array(n);
  for (let base = 0; base < n; base += headDim) {
    const ss = canonicalSumF32(headDim, (j) => of[base + j] * of[base + j]);
    const r = rsqrtF32(fr(fr(ss / headDim) + epsF));
    for (let j = 0; j < headDim; j++) {
      const normed = roundBf16(of[base + j] * r);
      const weighted = roundBf16(normed * wf[j]);
      y[base + j] = f32ToBf16(weighted * sigmoidF32(zf[base + j]));
    }
  }
  return y;
}
