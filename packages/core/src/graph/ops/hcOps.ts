import { defineOp } from './opDef.ts';
import { info, num, ShapeRule } from './shapeRules.ts';

// Hyper-connection ops (model.md, "Hyper-connection (HC) module"). `contract` is 'atom'
// (fp32 inside, one bf16 rounding per stored value) or 'hf' (HF's Qwen4ExpTextGatedResidual
// as bf16 torch ops: it rounds each sigmoid, each product, the inject scale and y * inj; its
// grouped norm and its stream mean round once, as 'atom' does), so the two contracts can be
// compared on the same graph.
export const hcExpand = defineOp({
  name: 'hcExpand',
  doc: 'X = [e, e, ..., e]: the embedding copied into each of n streams, stream-major. Exact.',
  inputs: [{ name: 'e', dtypes: ['bf16'] }],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: { kind: 'int', min: 1 } },
  opClass: 'data',
  shape: (ins, a) => {
    const r = new ShapeRule('hcExpand');
    const [rows, h] = r.mat(ins, 0, 'e');
    return [info([rows, num(a, 'streams') * h], 'bf16')];
  },
});

export const hcCombineNorm = defineOp({
  name: 'hcCombineNorm',
  doc: 'Pending combine (when given) as hcCombine, then the grouped RMS norm per stream, the same under both contracts: rstd = rsqrt(fl(sumsq / H) + eps) with sumsq = sum_j X[j]^2 in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly), normed = bf(fl(fl(X * rstd) * fl(1 + w))), one rounding.',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'blockOut', dtypes: ['bf16'], optional: true },
    { name: 'raw', dtypes: ['bf16'], optional: true },
    { name: 'normWeight', dtypes: ['bf16'], role: 'weight' },
  ],
  outputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'normed', dtypes: ['bf16'] },
  ],
  attrs: { streams: { kind: 'int', min: 1 }, eps: 'float', contract: { kind: 'string', oneOf: ['atom', 'hf'] } },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('hcCombineNorm');
    const x = r.port(ins, 0, 'x');
    const [rows, width] = r.matrix(x, 'x');
    const h = r.split(width, num(a, 'streams'), "input 'x'");
    if ((ins[1] === null) !== (ins[2] === null)) r.fail("inputs 'blockOut' and 'raw' come together (the pending combine) or not at all");
    if (ins[1]) r.matrix(ins[1], 'blockOut', h);
    if (ins[1]) r.rows(ins[1], 'blockOut', rows);
    if (ins[2]) r.matrix(ins[2], 'raw', num(a, 'streams'));
    if (ins[2]) r.rows(ins[2], 'raw', rows);
    r.vec(ins, 3, 'normWeight', width);
    return [info(x.shape, 'bf16'), info(x.shape, 'bf16')];
  },
});

export const hcScaledSilu = defineOp({
  name: 'hcScaledSilu',
  doc: 'gate = bf(silu(bf(d[:, :r] / n))); raw = d[:, r:r+n] (absent on the mixer). Rows of d are [r+n] or [r].',
  inputs: [{ name: 'd', dtypes: ['bf16'] }],
  outputs: [
    { name: 'gate', dtypes: ['bf16'] },
    { name: 'raw', dtypes: ['bf16'], optional: true },
  ],
  attrs: { streams: { kind: 'int', min: 1 }, lowRank: { kind: 'int', min: 1 }, contract: { kind: 'string', oneOf: ['atom', 'hf'] } },
  opClass: 'elementwise',
  shape: (ins, a) => {
    const r = new ShapeRule('hcScaledSilu');
    const [rows, cols] = r.mat(ins, 0, 'd');
    const lowRank = num(a, 'lowRank');
    const n = num(a, 'streams');
    if (cols !== lowRank && cols !== lowRank + n) r.fail(`input 'd' has ${cols} columns, expected ${lowRank} or ${lowRank + n}`);
    return [info([rows, lowRank], 'bf16'), cols === lowRank ? null : info([rows, n], 'bf16')];
  },
});

export const hcGatedMean = defineOp({
  name: 'hcGatedMean',
  doc: "x = bf(fl(acc / n)), acc = fl(acc + p_s) in fp32 over s = 0..n-1 in order; 'atom': p_s = fl(sigmoid(up_s) * normed_s); 'hf': p_s = bf(bf(sigmoid(up_s)) * normed_s) (torch's bf16 sigmoid and product; its .mean accumulates in fp32 and rounds once).",
  inputs: [
    { name: 'up', dtypes: ['bf16'] },
    { name: 'normed', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: { kind: 'int', min: 1 }, contract: { kind: 'string', oneOf: ['atom', 'hf'] } },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('hcGatedMean');
    const normed = r.port(ins, 1, 'normed');
    const [rows, width] = r.matrix(normed, 'normed');
    r.same(r.port(ins, 0, 'up'), normed, 'up');
    return [info([rows, r.split(width, num(a, 'streams'), "input 'normed'")], 'bf16')];
  },
});

export const hcCombine = defineOp({
  name: 'hcCombine',
  doc: "Unfused combine X_s = bf(X_s + p), inj_s = 2 sig_s with sig_s = sigmoid(bf(raw_s / n)); 'atom': p = fl(y * fl(2 sig_s)); 'hf': p = bf(y * 2 bf(sig_s)) (the doubling of a bf16 is exact).",
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'blockOut', dtypes: ['bf16'] },
    { name: 'raw', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: { kind: 'int', min: 1 }, contract: { kind: 'string', oneOf: ['atom', 'hf'] } },
  opClass: 'elementwise',
  shape: (ins, a) => {
    const r = new ShapeRule('hcCombine');
    const x = r.port(ins, 0, 'x');
    const [rows, width] = r.matrix(x, 'x');
    const n = num(a, 'streams');
    r.mat(ins, 1, 'blockOut', r.split(width, n, "input 'x'"), rows);
    r.mat(ins, 2, 'raw', n, rows);
    return [info(x.shape, 'bf16')];
  },
});
