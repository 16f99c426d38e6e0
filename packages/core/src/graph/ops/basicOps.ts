import { defineOp } from './opDef.ts';

export const linear = defineOp({
  name: 'linear',
  doc: 'y[t,o] = bf(sum_k x[t,k] * w[o,k]), w in PyTorch layout [out,in]; fp32 accumulation in k order 0..K-1, one rounding. bf16 x bf16 products are exact in fp32, so fused and unfused multiply-add agree.',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'w', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: {},
});

export const add = defineOp({
  name: 'add',
  doc: 'y = bf(a + b), elementwise, same shapes.',
  inputs: [
    { name: 'a', dtypes: ['bf16'] },
    { name: 'b', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: {},
});

export const sliceCols = defineOp({
  name: 'sliceCols',
  doc: 'y = x[:, start:end]. Exact.',
  inputs: [{ name: 'x', dtypes: ['bf16', 'f32'] }],
  outputs: [{ name: 'y', dtypes: ['bf16', 'f32'] }],
  attrs: { start: 'int', end: 'int' },
});

export const embed = defineOp({
  name: 'embed',
  doc: 'e[t] = table[ids[t]]. Exact; an id outside the table is an error.',
  inputs: [
    { name: 'ids', dtypes: ['i32'] },
    { name: 'table', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'e', dtypes: ['bf16'] }],
  attrs: {},
});

export const BASIC_OPS = [linear, add, sliceCols, embed] as const;
