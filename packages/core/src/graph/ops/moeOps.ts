import { defineOp } from './opDef.ts';
import { info, num, ShapeRule } from './shapeRules.ts';
import { fp8Info, type Fp8Format } from '../../numerics/fp8.ts';
import { QUANT_STYLES } from '../../numerics/quant.ts';
import { TOPK_TIES } from '../../numerics/topkTies.ts';

// MoE ops (model.md "MoE"). The router logits, the shared expert's projections and its
// gate logit use the `linear` op; these are the rest. Under TP/EP every rank runs them on
// its own experts and shared slice and returns a partial sum (no reduction inside).
export const moeRoute = defineOp({
  name: 'moeRoute',
  doc: "Softmax of bf16 logits [T,E] in fp32 (max-subtracted, exp, the sum over experts 0..E-1 in canonical reduction order v1, numerics/canonicalSum.ts), top-k largest first with ties to the lower expert index (ties=lower-index, absent: the rule of ATOM's kernels) or where torch.topk on the CPU puts them (ties=torch-cpu, numerics/topkTies.ts: the HF module in PyTorch), renormalized over the k (summed sequentially in top-k order) when normTopkProb, w = bf(.). ids [T,K] i32, weights [T,K] bf16.",
  inputs: [{ name: 'logits', dtypes: ['bf16'] }],
  outputs: [
    { name: 'ids', dtypes: ['i32'] },
    { name: 'weights', dtypes: ['bf16'] },
  ],
  attrs: { topK: 'int', normTopkProb: 'bool', ties: { kind: 'string', oneOf: TOPK_TIES, optional: true } },
  opClass: 'reduction',
  shape: (ins, a) => {
    const r = new ShapeRule('moeRoute');
    const [rows, experts] = r.mat(ins, 0, 'logits');
    if (num(a, 'topK') > experts) r.fail(`topK ${num(a, 'topK')} exceeds the ${experts} experts`);
    return [info([rows, num(a, 'topK')], 'i32'), info([rows, num(a, 'topK')], 'bf16')];
  },
});

export const moeExperts = defineOp({
  name: 'moeExperts',
  doc: "Routed sum over experts [firstExpert, firstExpert+numLocal) (gateUp [numLocal*2I,H], down [numLocal*H,I] stacked): per routed (t,e), h = bf(bf(silu(g)) * u) of Linear(x_t, gate_up_e), o = Linear(h, down_e), acc_t += bf(o * w) in fp32, experts in ascending index. Output routed [T,H] f32, unrounded. bf16Accumulate (the 'hf-eager' contract; absent = false): acc_t = bf(acc_t + bf(o * w)), each add rounded to bf16 as HF's experts loop adds into its bf16 accumulator with index_add_ (experts in ascending index, the fp32 add then one rounding).",
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'ids', dtypes: ['i32'] },
    { name: 'weights', dtypes: ['bf16'] },
    { name: 'gateUp', dtypes: ['bf16'], role: 'weight' },
    { name: 'down', dtypes: ['bf16'], role: 'weight' },
  ],
  outputs: [{ name: 'routed', dtypes: ['f32'] }],
  attrs: { firstExpert: 'int', numLocal: 'int', intermediate: 'int', bf16Accumulate: { kind: 'bool', optional: true } },
  opClass: 'gemm',
  shape: (ins, a) => {
    const r = new ShapeRule('moeExperts');
    const [rows, h] = r.mat(ins, 0, 'x');
    const ids = r.port(ins, 1, 'ids');
    r.matrix(ids, 'ids');
    r.rows(ids, 'ids', rows);
    r.same(r.port(ins, 2, 'weights'), ids, 'weights');
    const local = num(a, 'numLocal');
    const i = num(a, 'intermediate');
    r.mat(ins, 3, 'gateUp', h, local * 2 * i);
    r.mat(ins, 4, 'down', i, local * h);
    return [info([rows, h], 'f32')];
  },
});

export const moeExpertsFp8Ptpc = defineOp({
  name: 'moeExpertsFp8Ptpc',
  doc: "moeExperts on FP8 PTPC weights (aiter fused_moe per_Token, 2 stages): x comes quantized per token (xq, sx); the experts' gate_up qGateUp [numLocal*2I,H] and down qDown [numLocal*H,I] are fp8 with one f32 scale per row (sGateUp, sDown). Per routed (t,e): g, u = scaled(sum_k dec(xq[t,k]) * dec(qW[c,k])) in fp32, k in order, scales in scaleOrder ('weightFirst': fl(fl(acc * sw) * sx)), not rounded; h = bf(fl(silu(g) * u)); h quantized per (t,e) row (style, as quantFp8PerToken) to (qh, sh); o = scaled(sum_i dec(qh[i]) * dec(qDown[j,i])) likewise; acc_t += bf(fl(o * w)) in fp32, experts in ascending index. Output routed [T,H] f32, unrounded.",
  inputs: [
    { name: 'xq', dtypes: ['fp8e4m3fn', 'fp8e4m3fnuz'] },
    { name: 'sx', dtypes: ['f32'] },
    { name: 'ids', dtypes: ['i32'] },
    { name: 'weights', dtypes: ['bf16'] },
    { name: 'qGateUp', dtypes: ['fp8e4m3fn', 'fp8e4m3fnuz'], role: 'weight' },
    { name: 'sGateUp', dtypes: ['f32'], role: 'weight' },
    { name: 'qDown', dtypes: ['fp8e4m3fn', 'fp8e4m3fnuz'], role: 'weight' },
    { name: 'sDown', dtypes: ['f32'], role: 'weight' },
  ],
  outputs: [{ name: 'routed', dtypes: ['f32'] }],
  attrs: {
    firstExpert: 'int',
    numLocal: 'int',
    intermediate: 'int',
    format: { kind: 'string', oneOf: ['e4m3fn', 'e4m3fnuz'] },
    style: { kind: 'string', oneOf: QUANT_STYLES },
    scaleOrder: { kind: 'string', oneOf: ['weightFirst', 'tokenFirst'] },
  },
  opClass: 'gemm',
  shape: (ins, a) => {
    const r = new ShapeRule('moeExpertsFp8Ptpc');
    const dtype = fp8Info(a.format as Fp8Format).dtype;
    const [rows, h] = r.mat(ins, 0, 'xq');
    const ids = r.port(ins, 2, 'ids');
    r.matrix(ids, 'ids');
    r.rows(ids, 'ids', rows);
    r.same(r.port(ins, 3, 'weights'), ids, 'weights');
    const local = num(a, 'numLocal');
    const i = num(a, 'intermediate');
    r.mat(ins, 4, 'qGateUp', h, local * 2 * i);
    r.mat(ins, 6, 'qDown', i, local * h);
    for (const [port, name] of [
      [0, 'xq'],
      [4, 'qGateUp'],
      [6, 'qDown'],
    ] as const) {
      const v = r.port(ins, port, name);
      if (v.dtype !== dtype) r.fail(`input '${name}' is ${v.dtype}, expected ${dtype} (format '${String(a.format)}')`);
    }
    for (const [port, name, n] of [
      [1, 'sx', rows],
      [5, 'sGateUp', local * 2 * i],
      [7, 'sDown', local * h],
    ] as const) {
      const s = r.port(ins, port, name);
      if (s.shape.length !== 1 || s.shape[0] !== n) r.fail(`input '${name}' is [${s.shape.join(',')}], expected [${n}]`);
    }
    return [info([rows, h], 'f32')];
  },
});

export const moeSwiGlu = defineOp({
  name: 'moeSwiGlu',
  doc: 'h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)] -> [T,I].',
  inputs: [{ name: 'gateUp', dtypes: ['bf16'] }],
  outputs: [{ name: 'h', dtypes: ['bf16'] }],
  attrs: {},
  opClass: 'elementwise',
  shape: (ins) => {
    const r = new ShapeRule('moeSwiGlu');
    const [rows, cols] = r.mat(ins, 0, 'gateUp');
    return [info([rows, r.split(cols, 2, "input 'gateUp'")], 'bf16')];
  },
});

export const moeCombine = defineOp({
  name: 'moeCombine',
  doc: 'y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit)))), gateLogit [T,1] bf16 = bf(x w_sg^T); routed f32 [T,H], shared bf16 [T,H].',
  inputs: [
    { name: 'routed', dtypes: ['f32'] },
    { name: 'shared', dtypes: ['bf16'] },
    { name: 'gateLogit', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: {},
  opClass: 'elementwise',
  shape: (ins) => {
    const r = new ShapeRule('moeCombine');
    const shared = r.port(ins, 1, 'shared');
    const [rows] = r.matrix(shared, 'shared');
    r.same(r.port(ins, 0, 'routed'), shared, 'routed');
    r.mat(ins, 2, 'gateLogit', 1, rows);
    return [info(shared.shape, 'bf16')];
  },
});
