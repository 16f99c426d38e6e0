import { defineOp } from './opDef.ts';
import { info, num, ShapeRule } from './shapeRules.ts';

// Gated full-attention ops (model.md "Full attention"); the math and the exact operation
// order are in layers/attention/attentionMath.ts. The projections (q_proj, k_proj, v_proj,
// o_proj) are `linear` nodes. Head counts in attrs are the rank's own (TP-local).
export const attnHeadNormRope = defineOp({
  name: 'attnHeadNormRope',
  doc: 'Per head (columns offset..offset+headDim of each stride-wide block of x): n = bf(x * rsqrt(mean(x^2) + eps) * (1 + w)), then NeoX RoPE on the first ropeDims dims with the f32 cos/sin [T, ropeDims/2] tables: bf(n1 cos - n2 sin), bf(n2 cos + n1 sin). Out [T, heads*headDim].',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'w', dtypes: ['bf16'] },
    { name: 'cos', dtypes: ['f32'] },
    { name: 'sin', dtypes: ['f32'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { heads: 'int', headDim: 'int', stride: 'int', offset: 'int', ropeDims: 'int', eps: 'float' },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('attnHeadNormRope');
    const [rows] = r.matrix(r.port(ins, 0, 'x'), 'x', num(a, 'heads') * num(a, 'stride'));
    if (num(a, 'offset') + num(a, 'headDim') > num(a, 'stride')) r.fail('offset + headDim exceeds the head stride');
    for (const [i, name] of [[2, 'cos'], [3, 'sin']] as const) {
      r.matrix(r.port(ins, i, name), name, num(a, 'ropeDims') / 2);
      r.rows(ins[i]!, name, rows);
    }
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});

export const attnCausal = defineOp({
  name: 'attnCausal',
  doc: 'o = bf(softmax_causal(q k^T * scale) v) per query head with the GQA map h -> h / (heads/kvHeads); fp32 two-pass softmax (max, exp, sum in key order), o = fr(sum_j p_j v_j) / l.',
  inputs: [
    { name: 'q', dtypes: ['bf16'] },
    { name: 'k', dtypes: ['bf16'] },
    { name: 'v', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'o', dtypes: ['bf16'] }],
  attrs: { heads: 'int', kvHeads: 'int', headDim: 'int', scale: 'float' },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('attnCausal');
    const kv = num(a, 'kvHeads') * num(a, 'headDim');
    const [rows] = r.matrix(r.port(ins, 0, 'q'), 'q', num(a, 'heads') * num(a, 'headDim'));
    r.split(num(a, 'heads'), num(a, 'kvHeads'), 'GQA heads');
    for (const [i, name] of [[1, 'k'], [2, 'v']] as const) {
      r.matrix(r.port(ins, i, name), name, kv);
      r.rows(ins[i]!, name, rows);
    }
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});

export const attnOutputGate = defineOp({
  name: 'attnOutputGate',
  doc: 'y = bf(o * bf(sigmoid(gate))), gate = columns [headDim, 2 headDim) of each head block of the q_proj output qg [T, heads*2*headDim].',
  inputs: [
    { name: 'o', dtypes: ['bf16'] },
    { name: 'qg', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { heads: 'int', headDim: 'int' },
  opClass: 'elementwise',
  shape: (ins, a) => {
    const r = new ShapeRule('attnOutputGate');
    const [rows] = r.matrix(r.port(ins, 0, 'o'), 'o', num(a, 'heads') * num(a, 'headDim'));
    r.matrix(r.port(ins, 1, 'qg'), 'qg', num(a, 'heads') * 2 * num(a, 'headDim'));
    r.rows(ins[1]!, 'qg', rows);
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});
