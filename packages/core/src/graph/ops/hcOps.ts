import { defineOp } from './opDef.ts';

// Hyper-connection ops (model.md, "Hyper-connection (HC) module"). `contract` is 'atom'
// (fp32 inside, one bf16 rounding per stored value) or 'hf' (the HF reference's extra
// roundings), so the two contracts can be compared on the same graph.
export const hcExpand = defineOp({
  name: 'hcExpand',
  doc: 'X = [e, e, ..., e]: the embedding copied into each of n streams, stream-major. Exact.',
  inputs: [{ name: 'e', dtypes: ['bf16'] }],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: 'int' },
});

export const hcCombineNorm = defineOp({
  name: 'hcCombineNorm',
  doc: 'Pending combine X_s = bf(X_s + blockOut * 2 sigmoid(bf(raw_s/n))) (when given), then grouped RMS norm per stream with weight (1 + w).',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'blockOut', dtypes: ['bf16'], optional: true },
    { name: 'raw', dtypes: ['bf16'], optional: true },
    { name: 'normWeight', dtypes: ['bf16'] },
  ],
  outputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'normed', dtypes: ['bf16'] },
  ],
  attrs: { streams: 'int', eps: 'float', contract: 'string' },
});

export const hcScaledSilu = defineOp({
  name: 'hcScaledSilu',
  doc: 'gate = bf(silu(bf(d[:, :r] / n))); raw = d[:, r:r+n] (absent on the mixer). Rows of d are [r+n] or [r].',
  inputs: [{ name: 'd', dtypes: ['bf16'] }],
  outputs: [
    { name: 'gate', dtypes: ['bf16'] },
    { name: 'raw', dtypes: ['bf16'], optional: true },
  ],
  attrs: { streams: 'int', lowRank: 'int', contract: 'string' },
});

export const hcGatedMean = defineOp({
  name: 'hcGatedMean',
  doc: 'x = bf(sum_s sigmoid(up_s) * normed_s / n), fp32 accumulation over s = 0..n-1 in order.',
  inputs: [
    { name: 'up', dtypes: ['bf16'] },
    { name: 'normed', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: 'int', contract: 'string' },
});

export const hcCombine = defineOp({
  name: 'hcCombine',
  doc: 'Unfused combine X_s = bf(X_s + y * 2 sigmoid(bf(raw_s / n))).',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'blockOut', dtypes: ['bf16'] },
    { name: 'raw', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'x', dtypes: ['bf16'] }],
  attrs: { streams: 'int', contract: 'string' },
});

export const HC_OPS = [hcExpand, hcCombineNorm, hcScaledSilu, hcGatedMean, hcCombine] as const;
