import { bf16, defineOp, i32, intMin, port, ROW_DTYPES, weight } from './opDef.ts';
import { info, num } from './shapeRules.ts';

export const linear = defineOp({
  name: 'linear',
  doc: 'y[t,o] = bf(sum_k x[t,k] * w[o,k]), w in PyTorch layout [out,in]; fp32 accumulation in k order 0..K-1, one rounding. bf16 x bf16 products are exact in fp32, so fused and unfused multiply-add agree.',
  inputs: [bf16('x'), weight('w')],
  outputs: [bf16('y')],
  attrs: {},
  opClass: 'gemm',
  costFamily: 'gemm',
  shape: (ins, _, r) => {
    const [rows, k] = r.mat(ins, 0, 'x');
    const [out] = r.mat(ins, 1, 'w', k);
    return [info([rows, out], 'bf16')];
  },
});

export const add = defineOp({
  name: 'add',
  doc: 'y = bf(a + b), elementwise, same shapes.',
  inputs: [bf16('a'), bf16('b')],
  outputs: [bf16('y')],
  attrs: {},
  opClass: 'elementwise',
  costFamily: 'other',
  shape: (ins, _, r) => {
    const a = r.port(ins, 0, 'a');
    r.sameAs(ins, 1, 'b', a);
    return [info(a.shape, 'bf16')];
  },
});

export const sliceCols = defineOp({
  name: 'sliceCols',
  doc: 'y = x[:, start:end]. Exact.',
  inputs: [port('x', ROW_DTYPES)],
  outputs: [port('y', ROW_DTYPES)],
  attrs: { start: intMin(0), end: intMin(1) },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [x, rows, cols] = r.matrixPort(ins, 0, 'x');
    const start = num(a, 'start');
    const end = num(a, 'end');
    if (!(start >= 0 && start < end && end <= cols)) r.fail(`columns [${start}, ${end}) are outside [0, ${cols})`);
    return [info([rows, end - start], x.dtype)];
  },
});

export const embed = defineOp({
  name: 'embed',
  doc: 'e[t] = table[ids[t]]. Exact; an id outside the table is an error.',
  inputs: [i32('ids'), weight('table')],
  outputs: [bf16('e')],
  attrs: {},
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, _, r) => {
    const ids = r.port(ins, 0, 'ids');
    if (ids.shape.length !== 1) r.fail(`input 'ids' must be 1-D, got [${ids.shape.join(',')}]`);
    const [, h] = r.mat(ins, 1, 'table');
    return [info([ids.shape[0], h], 'bf16')];
  },
});
