import type { F64Tensor } from './exactInputs.ts';
import { numAttrs } from '../kernels/kernelArgs.ts';
import type { ExactKernelTable } from './exactTensor.ts';

// Float64 kernels of the GatedDeltaNet ops (graph/ops/gdnOps.ts): the math of
// layers/gdn/gdnMath.ts line by line in plain double arithmetic, with none of its roundings
// (no Math.fround, no bf16 rounding of outputs, no fp32 library functions: expF32 ->
// Math.exp, sigmoidF32/siluF32/softplusF32 -> their double formulas, rsqrtF32 -> 1 /
// Math.sqrt). The formula and the algorithm stay: the same epsilons, the same causal conv
// with zeros before row 0, the same recurrence from a zero state, softplus's threshold of 20
// (torch's: above it softplus(x) = x, the formula the model is defined with).

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);
/** softplus(x) = log(1 + exp(x)), = x above 20 (torch's threshold, as softplusF32). */
const softplus = (x: number): number => (x > 20 ? x : Math.log1p(Math.exp(x)));

export const gdnExact: ExactKernelTable = {
  perRank: {
    // y[t,c] = silu(sum_j w[c,j] x[t-K+1+j, c]), zeros before row 0
    gdnConvSilu: (inputs, attrs) => {
      const [x, w] = inputs as F64Tensor[];
      const K = numAttrs(attrs).kernel;
      const [T, C] = x.shape;
      const y = new Float64Array(T * C);
      for (let t = 0; t < T; t++) {
        for (let c = 0; c < C; c++) {
          let acc = 0;
          for (let j = 0; j < K; j++) {
            const src = t - K + 1 + j;
            if (src >= 0) acc += w.data[c * K + j] * x.data[src * C + c];
          }
          y[t * C + c] = silu(acc);
        }
      }
      return [{ dtype: 'bf16', shape: [T, C], data: y }];
    },
    // g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b)
    gdnGates: (inputs) => {
      const [b, a, aLog, dt] = inputs as F64Tensor[];
      const [T, heads] = b.shape;
      const g = new Float64Array(T * heads);
      const beta = new Float64Array(T * heads);
      for (let i = 0; i < T * heads; i++) {
        const h = i % heads;
        g[i] = -Math.exp(aLog.data[h]) * softplus(a.data[i] + dt.data[h]);
        beta[i] = sigmoid(b.data[i]);
      }
      return [
        { dtype: 'f32', shape: [T, heads], data: g },
        { dtype: 'bf16', shape: [T, heads], data: beta },
      ];
    },
    // the gated delta rule from a zero state, per value head (key head h / group):
    // q, k = l2norm (eps), q *= scale; S = exp(g) S; u = S^T k; S += k (x) beta (v - u); o = S^T q
    gdnRecurrence: (inputs, attrs) => {
      const { keyHeads: kh, valueHeads: vh, keyDim: dk, valueDim: dv, scale, l2Eps: eps } = numAttrs(attrs);
      const [qkv, g, beta] = inputs as F64Tensor[];
      const [T, C] = qkv.shape;
      const group = vh / kh;
      const S = new Float64Array(vh * dk * dv);
      const qn = new Float64Array(kh * dk);
      const kn = new Float64Array(kh * dk);
      const delta = new Float64Array(dv);
      const o = new Float64Array(T * vh * dv);
      const x = qkv.data;
      const l2 = (off: number, s: number, dst: Float64Array, at: number): void => {
        let ss = 0;
        for (let i = 0; i < dk; i++) ss += x[off + i] * x[off + i];
        const r = 1 / Math.sqrt(ss + eps);
        for (let i = 0; i < dk; i++) dst[at + i] = x[off + i] * r * s;
      };
      for (let t = 0; t < T; t++) {
        const row = t * C;
        for (let k = 0; k < kh; k++) {
          l2(row + k * dk, scale, qn, k * dk);
          l2(row + kh * dk + k * dk, 1, kn, k * dk);
        }
        for (let h = 0; h < vh; h++) {
          const kb = Math.floor(h / group) * dk;
          const sb = h * dk * dv;
          const decay = Math.exp(g.data[t * vh + h]);
          const bt = beta.data[t * vh + h];
          const vb = row + 2 * kh * dk + h * dv;
          for (let i = 0; i < dk * dv; i++) S[sb + i] *= decay;
          for (let j = 0; j < dv; j++) {
            let u = 0;
            for (let i = 0; i < dk; i++) u += S[sb + i * dv + j] * kn[kb + i];
            delta[j] = bt * (x[vb + j] - u);
          }
          for (let i = 0; i < dk; i++) {
            const ki = kn[kb + i];
            for (let j = 0; j < dv; j++) S[sb + i * dv + j] += ki * delta[j];
          }
          for (let j = 0; j < dv; j++) {
            let acc = 0;
            for (let i = 0; i < dk; i++) acc += S[sb + i * dv + j] * qn[kb + i];
            o[(t * vh + h) * dv + j] = acc;
          }
        }
      }
      return [{ dtype: 'bf16', shape: [T, vh * dv], data: o }];
    },
    // y = o * rsqrt(mean(o^2) + eps) * w * sigmoid(z), per value head
    gdnGatedNorm: (inputs, attrs) => {
      const { heads, headDim: hd, eps } = numAttrs(attrs);
      const [o, z, w] = inputs as F64Tensor[];
      const T = o.shape[0];
      const n = T * heads * hd;
      const y = new Float64Array(n);
      for (let base = 0; base < n; base += hd) {
        let ss = 0;
        for (let j = 0; j < hd; j++) ss += o.data[base + j] * o.data[base + j];
        const r = 1 / Math.sqrt(ss / hd + eps);
        for (let j = 0; j < hd; j++) y[base + j] = o.data[base + j] * r * w.data[j] * sigmoid(z.data[base + j]);
      }
      return [{ dtype: 'bf16', shape: [T, heads * hd], data: y }];
    },
  },
};
