import { COUNT, OPTIONAL_BOOL } from './attrSpecs.ts';
import { bf16, defineOp, f32, weight } from './opDef.ts';
import { info, num } from './shapeRules.ts';

// GatedDeltaNet ops (model.md "Linear attention (GatedDeltaNet)"); the math and the exact
// operation order are in layers/gdn/gdnMath.ts. The projections (qkv, z, b, a, out_proj)
// are `linear` nodes. Head counts in attrs are the rank's own (TP-local).
export const gdnConvSilu = defineOp({
  name: 'gdnConvSilu',
  doc: "y[t,c] = bf(silu(sum_{j<K} w[c,j] * x[t-K+1+j, c])), causal depthwise conv (zeros before row 0), fp32 accumulation in j order, one rounding. w is [C,1,K]. roundConv (the 'hf-eager' contract; absent = false): the conv sum is rounded to bf16 before the SiLU, y = bf(silu(bf(sum))), as HF's torch fallback stores the bf16 conv1d output before ACT2FN.",
  inputs: [bf16('x'), weight('w')],
  outputs: [bf16('y')],
  attrs: { kernel: COUNT, roundConv: OPTIONAL_BOOL },
  opClass: 'reduction',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [x, , c] = r.matrixPort(ins, 0, 'x');
    const w = r.port(ins, 1, 'w');
    if (w.shape.join(',') !== `${c},1,${num(a, 'kernel')}`) r.fail(`input 'w' is [${w.shape.join(',')}], expected [${c},1,${num(a, 'kernel')}]`);
    return [info(x.shape, 'bf16')];
  },
});

export const gdnGates = defineOp({
  name: 'gdnGates',
  doc: 'g = (-exp(A_log)) * softplus(a + dt_bias) in fp32, kept f32; beta = bf(sigmoid(b)). b, a [T, heads]; A_log, dt_bias [heads].',
  inputs: [bf16('b'), bf16('a'), weight('aLog'), weight('dtBias')],
  outputs: [f32('g'), bf16('beta')],
  attrs: {},
  opClass: 'elementwise',
  costFamily: 'attention',
  shape: (ins, _, r) => {
    const [b, , heads] = r.matrixPort(ins, 0, 'b');
    r.sameAs(ins, 1, 'a', b);
    r.vec(ins, 2, 'aLog', heads);
    r.vec(ins, 3, 'dtBias', heads);
    return [info(b.shape, 'f32'), info(b.shape, 'bf16')];
  },
});

export const gdnRecurrence = defineOp({
  name: 'gdnRecurrence',
  doc: "Gated delta rule from a zero fp32 state per value head (key head h / (valueHeads/keyHeads)): q,k = l2norm (fp32, l2Eps), q *= scale; S = exp(g) S; u = S^T k; S += k (x) (beta (v - u)); o = bf(S^T q). qkv is the conv output [T, q|k|v]; the l2 norms' sums of squares in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly), the state products (u, o) over the key dim in order; products rounded before adds.",
  inputs: [bf16('qkv'), f32('g'), bf16('beta')],
  outputs: [bf16('o')],
  attrs: { keyHeads: COUNT, valueHeads: COUNT, keyDim: COUNT, valueDim: COUNT, scale: 'float', l2Eps: 'float' },
  opClass: 'sequence',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const kd = num(a, 'keyHeads') * num(a, 'keyDim');
    const vd = num(a, 'valueHeads') * num(a, 'valueDim');
    if (num(a, 'valueHeads') % num(a, 'keyHeads') !== 0) r.fail(`valueHeads ${num(a, 'valueHeads')} is not a multiple of keyHeads ${num(a, 'keyHeads')}`);
    const [rows] = r.mat(ins, 0, 'qkv', 2 * kd + vd);
    r.mat(ins, 1, 'g', num(a, 'valueHeads'), rows);
    r.mat(ins, 2, 'beta', num(a, 'valueHeads'), rows);
    return [info([rows, vd], 'bf16')];
  },
});

export const gdnGatedNorm = defineOp({
  name: 'gdnGatedNorm',
  doc: 'Per value head: y = bf(bf(bf(o * rsqrt(mean(o^2) + eps)) * w) * sigmoid(z)), the sum of squares in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly); w [headDim] is a plain weight.',
  inputs: [bf16('o'), bf16('z'), weight('w')],
  outputs: [bf16('y')],
  attrs: { heads: COUNT, headDim: COUNT, eps: 'float' },
  opClass: 'reduction',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [o] = r.matrixPort(ins, 0, 'o', num(a, 'heads') * num(a, 'headDim'));
    r.sameAs(ins, 1, 'z', o);
    r.vec(ins, 2, 'w', num(a, 'headDim'));
    return [info(o.shape, 'bf16')];
  },
});
