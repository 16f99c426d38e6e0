import { COUNT, FP8_FORMAT, INDEX, OPTIONAL_BOOL, QUANT_STYLE, SCALE_ORDER, TOPK_TIES_ATTR } from './attrSpecs.ts';
import { bf16, defineOp, f32, FP8, i32, port, weight } from './opDef.ts';
import type { ValueInfo } from './shapeRules.ts';
import { fp8Dtype, info, num, type ShapeRule } from './shapeRules.ts';

// MoE ops (model.md "MoE"). The router logits, the shared expert's projections and its
// gate logit use the `linear` op; these are the rest. Under TP/EP every rank runs them on
// its own experts and shared slice and returns a partial sum (no reduction inside).

/**
 * The routing and the stacked expert weights of rows [rows, h] (ports ids, weights, gateUp,
 * down at `at`): ids [rows, K], weights like ids, gateUp [numLocal*2I, h], down [numLocal*h, I].
 */
function expertPorts(
  r: ShapeRule,
  ins: readonly (ValueInfo | null)[],
  at: readonly [number, number, number, number],
  names: readonly [string, string],
  rows: number,
  h: number,
  a: Readonly<Record<string, unknown>>,
): void {
  const ids = r.port(ins, at[0], 'ids');
  r.matrix(ids, 'ids');
  r.rows(ids, 'ids', rows);
  r.sameAs(ins, at[1], 'weights', ids);
  const local = num(a, 'numLocal');
  const i = num(a, 'intermediate');
  r.mat(ins, at[2], names[0], h, local * 2 * i);
  r.mat(ins, at[3], names[1], i, local * h);
}
export const moeRoute = defineOp({
  name: 'moeRoute',
  doc: "Softmax of bf16 logits [T,E] in fp32 (max-subtracted, exp, the sum over experts 0..E-1 in canonical reduction order v1, numerics/canonicalSum.ts), top-k largest first with ties to the lower expert index (ties=lower-index, absent: the rule of ATOM's kernels) or where torch.topk on the CPU puts them (ties=torch-cpu, numerics/topkTies.ts: the HF module in PyTorch), renormalized over the k (summed sequentially in top-k order) when normTopkProb, w = bf(.). ids [T,K] i32, weights [T,K] bf16.",
  inputs: [bf16('logits')],
  outputs: [i32('ids'), bf16('weights')],
  attrs: { topK: COUNT, normTopkProb: 'bool', ties: TOPK_TIES_ATTR },
  opClass: 'reduction',
  costFamily: 'moe',
  shape: (ins, a, r) => {
    const [rows, experts] = r.mat(ins, 0, 'logits');
    if (num(a, 'topK') > experts) r.fail(`topK ${num(a, 'topK')} exceeds the ${experts} experts`);
    return [info([rows, num(a, 'topK')], 'i32'), info([rows, num(a, 'topK')], 'bf16')];
  },
});

export const moeExperts = defineOp({
  name: 'moeExperts',
  doc: "Routed sum over experts [firstExpert, firstExpert+numLocal) (gateUp [numLocal*2I,H], down [numLocal*H,I] stacked): per routed (t,e), h = bf(bf(silu(g)) * u) of Linear(x_t, gate_up_e), o = Linear(h, down_e), acc_t += bf(o * w) in fp32, experts in ascending index. Output routed [T,H] f32, unrounded. bf16Accumulate (the 'hf-eager' contract; absent = false): acc_t = bf(acc_t + bf(o * w)), each add rounded to bf16 as HF's experts loop adds into its bf16 accumulator with index_add_ (experts in ascending index, the fp32 add then one rounding).",
  inputs: [bf16('x'), i32('ids'), bf16('weights'), weight('gateUp'), weight('down')],
  outputs: [f32('routed')],
  attrs: { firstExpert: INDEX, numLocal: INDEX, intermediate: COUNT, bf16Accumulate: OPTIONAL_BOOL },
  opClass: 'gemm',
  costFamily: 'moe',
  shape: (ins, a, r) => {
    const [rows, h] = r.mat(ins, 0, 'x');
    expertPorts(r, ins, [1, 2, 3, 4], ['gateUp', 'down'], rows, h, a);
    return [info([rows, h], 'f32')];
  },
});

export const moeExpertsFp8Ptpc = defineOp({
  name: 'moeExpertsFp8Ptpc',
  doc: "moeExperts on FP8 PTPC weights (aiter fused_moe per_Token, 2 stages): x comes quantized per token (xq, sx); the experts' gate_up qGateUp [numLocal*2I,H] and down qDown [numLocal*H,I] are fp8 with one f32 scale per row (sGateUp, sDown). Per routed (t,e): g, u = scaled(sum_k dec(xq[t,k]) * dec(qW[c,k])) in fp32, k in order, scales in scaleOrder ('weightFirst': fl(fl(acc * sw) * sx)), not rounded; h = bf(fl(silu(g) * u)); h quantized per (t,e) row (style, as quantFp8PerToken) to (qh, sh); o = scaled(sum_i dec(qh[i]) * dec(qDown[j,i])) likewise; acc_t += bf(fl(o * w)) in fp32, experts in ascending index. Output routed [T,H] f32, unrounded.",
  inputs: [
    port('xq', FP8),
    f32('sx'),
    i32('ids'),
    bf16('weights'),
    weight('qGateUp', FP8),
    weight('sGateUp', ['f32']),
    weight('qDown', FP8),
    weight('sDown', ['f32']),
  ],
  outputs: [f32('routed')],
  attrs: { firstExpert: INDEX, numLocal: INDEX, intermediate: COUNT, format: FP8_FORMAT, style: QUANT_STYLE, scaleOrder: SCALE_ORDER },
  opClass: 'gemm',
  costFamily: 'moe',
  shape: (ins, a, r) => {
    const dtype = fp8Dtype(a);
    const [rows, h] = r.mat(ins, 0, 'xq');
    expertPorts(r, ins, [2, 3, 4, 6], ['qGateUp', 'qDown'], rows, h, a);
    for (const [at, name] of [
      [0, 'xq'],
      [4, 'qGateUp'],
      [6, 'qDown'],
    ] as const)
      r.fp8(r.port(ins, at, name), name, dtype, a);
    const local = num(a, 'numLocal');
    r.vec(ins, 1, 'sx', rows);
    r.vec(ins, 5, 'sGateUp', local * 2 * num(a, 'intermediate'));
    r.vec(ins, 7, 'sDown', local * h);
    return [info([rows, h], 'f32')];
  },
});

export const moeSwiGlu = defineOp({
  name: 'moeSwiGlu',
  doc: 'h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)] -> [T,I].',
  inputs: [bf16('gateUp')],
  outputs: [bf16('h')],
  attrs: {},
  opClass: 'elementwise',
  costFamily: 'moe',
  shape: (ins, _, r) => {
    const [rows, cols] = r.mat(ins, 0, 'gateUp');
    return [info([rows, r.split(cols, 2, "input 'gateUp'")], 'bf16')];
  },
});

export const moeCombine = defineOp({
  name: 'moeCombine',
  doc: 'y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit)))), gateLogit [T,1] bf16 = bf(x w_sg^T); routed f32 [T,H], shared bf16 [T,H].',
  inputs: [f32('routed'), bf16('shared'), bf16('gateLogit')],
  outputs: [bf16('y')],
  attrs: {},
  opClass: 'elementwise',
  costFamily: 'moe',
  shape: (ins, _, r) => {
    const [shared, rows] = r.matrixPort(ins, 1, 'shared');
    r.sameAs(ins, 0, 'routed', shared);
    r.mat(ins, 2, 'gateLogit', 1, rows);
    return [info(shared.shape, 'bf16')];
  },
});
