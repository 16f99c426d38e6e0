import { COUNT } from './attrSpecs.ts';
import { bf16, defineOp, oneOf, optional, weight } from './opDef.ts';
import { info, num } from './shapeRules.ts';

// Hyper-connection ops (model.md, "Hyper-connection (HC) module"). `contract` is 'atom'
// (fp32 inside, one bf16 rounding per stored value) or 'hf' (HF's Qwen4ExpTextGatedResidual
// as bf16 torch ops: it rounds each sigmoid, each product, the inject scale and y * inj; its
// grouped norm and its stream mean round once, as 'atom' does), so the two contracts can be
// compared on the same graph.
const CONTRACT = oneOf(['atom', 'hf']);

export const hcExpand = defineOp({
  name: 'hcExpand',
  doc: 'X = [e, e, ..., e]: the embedding copied into each of n streams, stream-major. Exact.',
  inputs: [bf16('e')],
  outputs: [bf16('x')],
  attrs: { streams: COUNT },
  opClass: 'data',
  costFamily: 'hc',
  shape: (ins, a, r) => {
    const [rows, h] = r.mat(ins, 0, 'e');
    return [info([rows, num(a, 'streams') * h], 'bf16')];
  },
});

export const hcCombineNorm = defineOp({
  name: 'hcCombineNorm',
  doc: 'Pending combine (when given) as hcCombine, then the grouped RMS norm per stream, the same under both contracts: rstd = rsqrt(fl(sumsq / H) + eps) with sumsq = sum_j X[j]^2 in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly), normed = bf(fl(fl(X * rstd) * fl(1 + w))), one rounding.',
  inputs: [bf16('x'), optional(bf16('blockOut')), optional(bf16('raw')), weight('normWeight')],
  outputs: [bf16('x'), bf16('normed')],
  attrs: { streams: COUNT, eps: 'float', contract: CONTRACT },
  opClass: 'reduction',
  costFamily: 'hc',
  shape: (ins, a, r) => {
    const [x, rows, width] = r.matrixPort(ins, 0, 'x');
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
  inputs: [bf16('d')],
  outputs: [bf16('gate'), optional(bf16('raw'))],
  attrs: { streams: COUNT, lowRank: COUNT, contract: CONTRACT },
  opClass: 'elementwise',
  costFamily: 'hc',
  shape: (ins, a, r) => {
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
  inputs: [bf16('up'), bf16('normed')],
  outputs: [bf16('x')],
  attrs: { streams: COUNT, contract: CONTRACT },
  opClass: 'reduction',
  costFamily: 'hc',
  shape: (ins, a, r) => {
    const [normed, rows, width] = r.matrixPort(ins, 1, 'normed');
    r.sameAs(ins, 0, 'up', normed);
    return [info([rows, r.split(width, num(a, 'streams'), "input 'normed'")], 'bf16')];
  },
});

export const hcCombine = defineOp({
  name: 'hcCombine',
  doc: "Unfused combine X_s = bf(X_s + p), inj_s = 2 sig_s with sig_s = sigmoid(bf(raw_s / n)); 'atom': p = fl(y * fl(2 sig_s)); 'hf': p = bf(y * 2 bf(sig_s)) (the doubling of a bf16 is exact).",
  inputs: [bf16('x'), bf16('blockOut'), bf16('raw')],
  outputs: [bf16('x')],
  attrs: { streams: COUNT, contract: CONTRACT },
  opClass: 'elementwise',
  costFamily: 'hc',
  shape: (ins, a, r) => {
    const [x, rows, width] = r.matrixPort(ins, 0, 'x');
    const n = num(a, 'streams');
    r.mat(ins, 1, 'blockOut', r.split(width, n, "input 'x'"), rows);
    r.mat(ins, 2, 'raw', n, rows);
    return [info(x.shape, 'bf16')];
  },
});
