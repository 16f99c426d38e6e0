import { defineOp } from './opDef.ts';

// GatedDeltaNet ops (model.md "Linear attention (GatedDeltaNet)"); the math and the exact
// operation order are in layers/gdn/gdnMath.ts. The projections (qkv, z, b, a, out_proj)
// are `linear` nodes. Head counts in attrs are the rank's own (TP-local).
export const gdnConvSilu = defineOp({
  name: 'gdnConvSilu',
  doc: 'y[t,c] = bf(silu(sum_{j<K} w[c,j] * x[t-K+1+j, c])), causal depthwise conv (zeros before row 0), fp32 accumulation in j order, one rounding. w is [C,1,K].',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'w', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { kernel: 'int' },
});

export const gdnGates = defineOp({
  name: 'gdnGates',
  doc: 'g = (-exp(A_log)) * softplus(a + dt_bias) in fp32, kept f32; beta = bf(sigmoid(b)). b, a [T, heads]; A_log, dt_bias [heads].',
  inputs: [
    { name: 'b', dtypes: ['bf16'] },
    { name: 'a', dtypes: ['bf16'] },
    { name: 'aLog', dtypes: ['bf16'] },
    { name: 'dtBias', dtypes: ['bf16'] },
  ],
  outputs: [
    { name: 'g', dtypes: ['f32'] },
    { name: 'beta', dtypes: ['bf16'] },
  ],
  attrs: {},
});

export const gdnRecurrence = defineOp({
  name: 'gdnRecurrence',
  doc: 'Gated delta rule from a zero fp32 state per value head (key head h / (valueHeads/keyHeads)): q,k = l2norm (fp32, l2Eps), q *= scale; S = exp(g) S; u = S^T k; S += k (x) (beta (v - u)); o = bf(S^T q). qkv is the conv output [T, q|k|v]; sums over the key dim in order; products rounded before adds.',
  inputs: [
    { name: 'qkv', dtypes: ['bf16'] },
    { name: 'g', dtypes: ['f32'] },
    { name: 'beta', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'o', dtypes: ['bf16'] }],
  attrs: { keyHeads: 'int', valueHeads: 'int', keyDim: 'int', valueDim: 'int', scale: 'float', l2Eps: 'float' },
});

export const gdnGatedNorm = defineOp({
  name: 'gdnGatedNorm',
  doc: 'Per value head: y = bf(bf(bf(o * rsqrt(mean(o^2) + eps)) * w) * sigmoid(z)), the sum of squares in order; w [headDim] is a plain weight.',
  inputs: [
    { name: 'o', dtypes: ['bf16'] },
    { name: 'z', dtypes: ['bf16'] },
    { name: 'w', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { heads: 'int', headDim: 'int', eps: 'float' },
});

export const GDN_OPS = [gdnConvSilu, gdnGates, gdnRecurrence, gdnGatedNorm] as const;
