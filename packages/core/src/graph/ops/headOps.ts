import { COUNT, INDEX } from './attrSpecs.ts';
import { ANY_DTYPE, bf16, defineOp, i32, port } from './opDef.ts';
import { info, num, withRows } from './shapeRules.ts';

// The LM head and MTP head ops (model.md "LM head and MTP"; layers/mtp). The head GEMMs are
// `linear`, the norms `hcCombineNorm` with one group; these move rows, ids and views, and
// pick the greedy token. All exact.

export const sliceRows = defineOp({
  name: 'sliceRows',
  doc: 'y = x[start:end] along the first axis (e.g. the last position before the LM head). Exact.',
  inputs: [port('x', ANY_DTYPE)],
  outputs: [port('y', ANY_DTYPE)],
  attrs: { start: INDEX, end: COUNT },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const x = r.port(ins, 0, 'x');
    if (x.shape.length < 1) r.fail("input 'x' must have at least one axis");
    const [start, end] = [num(a, 'start'), num(a, 'end')];
    if (!(start < end && end <= x.shape[0])) r.fail(`rows [${start}, ${end}) are outside [0, ${x.shape[0]})`);
    return [withRows(x, end - start)];
  },
});

export const reshape = defineOp({
  name: 'reshape',
  doc: 'y = x viewed with another row-major shape of the same element count (e.g. [T, n*H] as [T*n, H] for fc_hidden). Exact.',
  inputs: [port('x', ANY_DTYPE)],
  outputs: [port('y', ANY_DTYPE)],
  attrs: { shape: 'int[]' },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const x = r.port(ins, 0, 'x');
    const shape = a.shape as number[];
    const count = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
    if (shape.length < 1 || shape.some((d) => d < 0)) r.fail(`attribute 'shape' [${shape.join(',')}] must list non-negative sizes`);
    if (count(shape) !== count(x.shape)) r.fail(`[${x.shape.join(',')}] has ${count(x.shape)} elements, shape [${shape.join(',')}] holds ${count(shape)}`);
    return [info(shape, x.dtype)];
  },
});

export const rowBlocksToCols = defineOp({
  name: 'rowBlocksToCols',
  doc: 'y[t, p*C + j] = x[p*R + t, j]: `parts` blocks of R rows (an all-gather of vocab-sharded logits, rank order) laid side by side as [R, parts*C]. Exact.',
  inputs: [bf16('x')],
  outputs: [bf16('y')],
  attrs: { parts: COUNT },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [rows, cols] = r.mat(ins, 0, 'x');
    const parts = num(a, 'parts');
    if (rows % parts !== 0) r.fail(`${rows} rows do not split into ${parts} equal blocks`);
    return [info([rows / parts, parts * cols], 'bf16')];
  },
});

export const argmax = defineOp({
  name: 'argmax',
  doc: "ids[t] = the first index of the maximum of logits[t, :] (torch.argmax): +0 and -0 tie, a NaN counts as the maximum (the first NaN wins). Equals ATOM's vocab-sharded compute_argmax_token (per-shard argmax, lowest rank among equal maxima). Exact.",
  inputs: [bf16('logits')],
  outputs: [i32('ids')],
  attrs: {},
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, _, r) => {
    const [rows, vocab] = r.mat(ins, 0, 'logits');
    if (vocab < 1) r.fail("input 'logits' has no columns");
    return [info([rows], 'i32')];
  },
});

export const mtpDraftIds = defineOp({
  name: 'mtpDraftIds',
  doc: "y = [ids[1], ..., ids[T-1], next[0]]: the drafter's token ids (ATOM eagle_proposer: the target ids shifted by one, the last row the token just sampled). Exact.",
  inputs: [i32('ids'), i32('next')],
  outputs: [i32('y')],
  attrs: {},
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, _, r) => {
    const ids = r.port(ins, 0, 'ids');
    const next = r.port(ins, 1, 'next');
    if (ids.shape.length !== 1 || ids.shape[0] < 1) r.fail(`input 'ids' must be [T] with T >= 1, got [${ids.shape.join(',')}]`);
    if (next.shape.length !== 1 || next.shape[0] !== 1) r.fail(`input 'next' must be [1], got [${next.shape.join(',')}]`);
    return [info(ids.shape, 'i32')];
  },
});
