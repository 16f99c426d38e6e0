import { defineOp } from './opDef.ts';
import { info, num, ShapeRule } from './shapeRules.ts';

// PLE ops (model.md "PLE"; layers/ple). key_proj and value_proj use the `linear` op. The
// PLE is replicated: every rank runs these on all T rows (sharding starts after it).
export const pleNgramIds = defineOp({
  name: 'pleNgramIds',
  doc: 'Host integer op: token ids [T] -> row ids [T, heads] of the hashed bigram/trigram tables (layers/ple/pleHash.ts: splitmix64 odd multipliers, XOR of id*mult mod 2^64, mod the head prime; history resets after EOS). Exact.',
  inputs: [{ name: 'tokens', dtypes: ['i32'] }],
  outputs: [{ name: 'ids', dtypes: ['i32'] }],
  attrs: { ngramSize: 'int', headsPerNgram: 'int', vocabSizes: 'int[]', vocabSize: 'int', eosTokenId: 'int' },
  opClass: 'data',
  shape: (ins, a) => {
    const r = new ShapeRule('pleNgramIds');
    const t = r.port(ins, 0, 'tokens');
    if (t.shape.length !== 1) r.fail(`input 'tokens' must be 1-D, got [${t.shape.join(',')}]`);
    return [info([t.shape[0], (num(a, 'ngramSize') - 1) * num(a, 'headsPerNgram')], 'i32')];
  },
  host: true,
});

export const pleNgramEmbed = defineOp({
  name: 'pleNgramEmbed',
  doc: 'E[t] = concat_j table_j[ids[t,j]], tables stacked along rows [sum V_j, headDim] (head 0 first) -> [T, heads*headDim]. Exact; an id outside its head table is an error.',
  inputs: [
    { name: 'ids', dtypes: ['i32'] },
    { name: 'tables', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'e', dtypes: ['bf16'] }],
  attrs: { vocabSizes: 'int[]' },
  opClass: 'data',
  shape: (ins, a) => {
    const r = new ShapeRule('pleNgramEmbed');
    const [rows, heads] = r.matrix(r.port(ins, 0, 'ids'), 'ids', (a.vocabSizes as number[]).length);
    const [, d] = r.matrix(r.port(ins, 1, 'tables'), 'tables');
    return [info([rows, heads * d], 'bf16')];
  },
});

export const pleRmsNorm = defineOp({
  name: 'pleRmsNorm',
  doc: 'Grouped RMS norm, plain weight: per row and group of width/groups columns, rstd = 1/sqrt(sum x^2 (fp32, in order) / D + eps), y = bf(x * rstd * w).',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'weight', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { groups: 'int', eps: 'float' },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('pleRmsNorm');
    const x = r.port(ins, 0, 'x');
    const [, width] = r.matrix(x, 'x');
    r.split(width, num(a, 'groups'), "input 'x'");
    const w = r.port(ins, 1, 'weight');
    if (w.shape.join(',') !== `${width}`) r.fail(`input 'weight' is [${w.shape.join(',')}], expected [${width}]`);
    return [info(x.shape, 'bf16')];
  },
});

export const pleGate = defineOp({
  name: 'pleGate',
  doc: 'gate[t,s] = sigmoid(signed_sqrt(sum_j q[t,s,j] k[t,j] / sqrt(H))), fp32 dot in j order, signed_sqrt(v) = sign(v) sqrt(max(|v|, 1e-6)); q [T,n*H], k [T,H] bf16 -> gate [T,n] f32, unrounded.',
  inputs: [
    { name: 'q', dtypes: ['bf16'] },
    { name: 'k', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'gate', dtypes: ['f32'] }],
  attrs: { streams: 'int' },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('pleGate');
    const [rows, width] = r.matrix(r.port(ins, 0, 'q'), 'q');
    r.matrix(r.port(ins, 1, 'k'), 'k', r.split(width, num(a, 'streams'), "input 'q'"));
    r.rows(ins[1]!, 'k', rows);
    return [info([rows, num(a, 'streams')], 'f32')];
  },
});

export const pleGatedValue = defineOp({
  name: 'pleGatedValue',
  doc: 'G[t, s*H+j] = bf(gate[t,s] * value[t,j]): gate [T,n] f32, value [T,H] bf16 -> [T,n*H].',
  inputs: [
    { name: 'gate', dtypes: ['f32'] },
    { name: 'value', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'g', dtypes: ['bf16'] }],
  attrs: { streams: 'int' },
  opClass: 'elementwise',
  shape: (ins, a) => {
    const r = new ShapeRule('pleGatedValue');
    const [rows, h] = r.matrix(r.port(ins, 1, 'value'), 'value');
    r.matrix(r.port(ins, 0, 'gate'), 'gate', num(a, 'streams'));
    r.rows(ins[0]!, 'gate', rows);
    return [info([rows, num(a, 'streams') * h], 'bf16')];
  },
});

export const pleConvSilu = defineOp({
  name: 'pleConvSilu',
  doc: 'out = bf(G + bf(silu(bf(conv)))), conv[t,c] = sum_{i=0..K-1} w[c,0,i] * Gn[t-(K-1-i)*dilation, c], fp32 in i order, zeros before the start (causal depthwise conv1d); Gn the normed G, w [C,1,K].',
  inputs: [
    { name: 'gNormed', dtypes: ['bf16'] },
    { name: 'g', dtypes: ['bf16'] },
    { name: 'weight', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'out', dtypes: ['bf16'] }],
  attrs: { dilation: 'int' },
  opClass: 'reduction',
  shape: (ins) => {
    const r = new ShapeRule('pleConvSilu');
    const g = r.port(ins, 1, 'g');
    const [, c] = r.matrix(g, 'g');
    r.same(r.port(ins, 0, 'gNormed'), g, 'gNormed');
    const w = r.port(ins, 2, 'weight');
    if (w.shape.length !== 3 || w.shape[0] !== c || w.shape[1] !== 1) r.fail(`input 'weight' is [${w.shape.join(',')}], expected [${c},1,K]`);
    return [info(g.shape, 'bf16')];
  },
});
