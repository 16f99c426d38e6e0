import { COUNT, INDEX, OPTIONAL_BOOL, TOPK_TIES_ATTR } from './attrSpecs.ts';
import { bf16, defineOp, i32, weight } from './opDef.ts';
import type { ValueInfo } from './shapeRules.ts';
import { info, num, type ShapeRule } from './shapeRules.ts';

// Gated full-attention ops with the QSA indexer (model.md "Full attention"); the math and
// the exact operation order are in layers/attention/{attentionMath,qsaIndexer}.ts. The
// projections (q_proj, k_proj, v_proj, o_proj, index_qk_proj) are `linear` nodes. Head
// counts in attrs are the rank's own (TP-local). Positions: a prefill from an empty cache.

/** Inputs i and i + 1: the bf16 RoPE tables cos, sin [rows, ropeDims/2]. */
function ropeTablePorts(r: ShapeRule, ins: readonly (ValueInfo | null)[], i: number, ropeDims: number, rows: number): void {
  r.mat(ins, i, 'cos', ropeDims / 2, rows);
  r.mat(ins, i + 1, 'sin', ropeDims / 2, rows);
}

/** The RMS1p norm and RoPE ops' ports: rows, the norm weight, the RoPE tables cos and sin. */
const normRopePorts = (rows: string) => [bf16(rows), weight('w'), bf16('cos'), bf16('sin')];

function checkRopeDims(r: ShapeRule, ropeDims: number, headDim: number): void {
  if (ropeDims % 2 !== 0 || ropeDims > headDim) r.fail(`ropeDims ${ropeDims} must be even and at most headDim ${headDim}`);
}

export const attnHeadNormRopeBf16 = defineOp({
  name: 'attnHeadNormRopeBf16',
  doc: "Per head (columns offset..offset+headDim of each stride-wide block of x): n = bf(fr(x * rsqrt(fr(ss / headDim) + eps)) * fr(1 + w)), ss = sum_d x_d^2 in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly), then NeoX RoPE on the first ropeDims dims with row r's bf16 cos/sin (tables [rows, ropeDims/2]), each product and the sum rounded to bf16 as HF and ATOM do: bf(bf(n1 c) + bf(-n2 s)), bf(bf(n2 c) + bf(n1 s)). Out [rows, heads*headDim].",
  inputs: normRopePorts('x'),
  outputs: [bf16('y')],
  attrs: { heads: COUNT, headDim: COUNT, stride: COUNT, offset: INDEX, ropeDims: INDEX, eps: 'float' },
  opClass: 'reduction',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [rows] = r.mat(ins, 0, 'x', num(a, 'heads') * num(a, 'stride'));
    if (num(a, 'offset') + num(a, 'headDim') > num(a, 'stride'))
      r.fail(`offset ${num(a, 'offset')} + headDim ${num(a, 'headDim')} exceeds the head stride ${num(a, 'stride')}`);
    checkRopeDims(r, num(a, 'ropeDims'), num(a, 'headDim'));
    r.vec(ins, 1, 'w', num(a, 'headDim'));
    ropeTablePorts(r, ins, 2, num(a, 'ropeDims'), rows);
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});

export const qsaBlockKeys = defineOp({
  name: 'qsaBlockKeys',
  doc: 'QSA block keys of the raw indexer keys kRaw [T, headDim]: for b < nb = floor(T / compressRatio), pooled = bf(fr(sum of rows b*ratio.. in row order) / ratio), then RMS1p with w (its sum of squares in canonical order v1) and RoPE at position ratio*b as attnHeadNormRopeBf16 (tables [T, ropeDims/2]). Out [nb, headDim].',
  inputs: normRopePorts('kRaw'),
  outputs: [bf16('kb')],
  attrs: { headDim: COUNT, compressRatio: COUNT, ropeDims: INDEX, eps: 'float' },
  opClass: 'reduction',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [T] = r.mat(ins, 0, 'kRaw', num(a, 'headDim'));
    checkRopeDims(r, num(a, 'ropeDims'), num(a, 'headDim'));
    r.vec(ins, 1, 'w', num(a, 'headDim'));
    ropeTablePorts(r, ins, 2, num(a, 'ropeDims'), T);
    return [info([Math.floor(T / num(a, 'compressRatio')), num(a, 'headDim')], 'bf16')];
  },
});

export const qsaSelect = defineOp({
  name: 'qsaSelect',
  doc: "QSA selection of query rows r0..r0+R-1 (row r at position p = r0 + r) of a T-token sequence: fp32 score_b = fr(sum_h relu(dot(q_h, kb_b)) / fr(sqrt(headDim))) over the row's nb_p = floor((p+1)/ratio) visible blocks (dot in d order, heads in order); blocks[r] = the top min(width, nb_p) blocks, ties to the lower index (ties 'lower-index', absent: ATOM's rule) or the set torch.topk picks on the CPU (ties 'torch-cpu', numerics/topkTies.ts: the HF module in PyTorch), ascending, then -1; rows with p >= tokens all -1. q [R, nHeads*headDim] (normed, roped), kb [floor(tokens/ratio), headDim]. Out i32 [R, width].",
  inputs: [bf16('q'), bf16('kb')],
  outputs: [i32('blocks')],
  attrs: { r0: INDEX, tokens: COUNT, nHeads: COUNT, headDim: COUNT, compressRatio: COUNT, width: COUNT, ties: TOPK_TIES_ATTR },
  opClass: 'reduction',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [rows] = r.mat(ins, 0, 'q', num(a, 'nHeads') * num(a, 'headDim'));
    r.mat(ins, 1, 'kb', num(a, 'headDim'), Math.floor(num(a, 'tokens') / num(a, 'compressRatio')));
    return [info([rows, num(a, 'width')], 'i32')];
  },
});

export const qsaKeptCount = defineOp({
  name: 'qsaKeptCount',
  doc: "Keys each query row t (position t) attends to: ratio * (blocks listed in row t, entries >= 0) + the tail (t + 1 - floor((t+1)/ratio)*ratio). blocks i32 [T, width] as qsaSelect writes them; out i32 [T]. Exact; the dump's attn.kept.",
  inputs: [i32('blocks')],
  outputs: [i32('kept')],
  attrs: { compressRatio: COUNT },
  opClass: 'data',
  costFamily: 'attention',
  shape: (ins, _, r) => {
    const [rows] = r.mat(ins, 0, 'blocks');
    return [info([rows], 'i32')];
  },
});

export const attnCausalQsa = defineOp({
  name: 'attnCausalQsa',
  doc: "o = bf(softmax(q k^T * scale) v) per query head over row t's kept keys (the tokens of its listed blocks, then the tail floor((t+1)/ratio)*ratio..t, ascending; blocks i32 [T, width] as qsaSelect writes them), GQA map h -> h / (heads/kvHeads); fp32 two-pass softmax: m = max_j s_j, p_j = exp(fr(s_j - m)), l = sum of p_0..p_{n-1} (the kept keys in list order) in canonical reduction order v1 (numerics/canonicalSum.ts), o = fr(sum_j p_j v_j) / l with the q.k dots (d order) and the p.v sums (key order) sequential. Equal to dense causal attention when no row drops a block. eagerSoftmax (the 'hf-eager' contract; absent = false): HF's eager_attention_forward on bf16 tensors, s_j = bf(fl(bf(q.k_j) * scale)), the same m, exponentials and l, then p_j = bf(fl(p_j * fl(1/l))) (torch's CPU softmax multiplies by the reciprocal; .to(bf16)) and o = bf(sum_j p_j v_j) without the division.",
  inputs: [bf16('q'), bf16('k'), bf16('v'), i32('blocks')],
  outputs: [bf16('o')],
  attrs: { heads: COUNT, kvHeads: COUNT, headDim: COUNT, scale: 'float', compressRatio: COUNT, width: COUNT, eagerSoftmax: OPTIONAL_BOOL },
  opClass: 'sequence',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const kv = num(a, 'kvHeads') * num(a, 'headDim');
    const [rows] = r.mat(ins, 0, 'q', num(a, 'heads') * num(a, 'headDim'));
    if (num(a, 'heads') % num(a, 'kvHeads') !== 0) r.fail(`heads ${num(a, 'heads')} is not a multiple of kvHeads ${num(a, 'kvHeads')} (GQA)`);
    r.mat(ins, 1, 'k', kv, rows);
    r.mat(ins, 2, 'v', kv, rows);
    r.mat(ins, 3, 'blocks', num(a, 'width'), rows);
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});

export const attnOutputGate = defineOp({
  name: 'attnOutputGate',
  doc: 'y = bf(o * bf(sigmoid(gate))), gate = columns [headDim, 2 headDim) of each head block of the q_proj output qg [T, heads*2*headDim].',
  inputs: [bf16('o'), bf16('qg')],
  outputs: [bf16('y')],
  attrs: { heads: COUNT, headDim: COUNT },
  opClass: 'elementwise',
  costFamily: 'attention',
  shape: (ins, a, r) => {
    const [rows] = r.mat(ins, 0, 'o', num(a, 'heads') * num(a, 'headDim'));
    r.mat(ins, 1, 'qg', num(a, 'heads') * 2 * num(a, 'headDim'), rows);
    return [info([rows, num(a, 'heads') * num(a, 'headDim')], 'bf16')];
  },
});
