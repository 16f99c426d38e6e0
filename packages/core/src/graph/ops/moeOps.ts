import { defineOp } from './opDef.ts';

// MoE ops (model.md "MoE"). The router logits, the shared expert's projections and its
// gate logit use the `linear` op; these are the rest. Under TP/EP every rank runs them on
// its own experts and shared slice and returns a partial sum (no reduction inside).
export const moeRoute = defineOp({
  name: 'moeRoute',
  doc: 'Softmax of bf16 logits [T,E] in fp32 (max-subtracted, exp, sum in expert order), top-k largest first with ties to the lower expert index, renormalized over the k in top-k order when normTopkProb, w = bf(.). ids [T,K] i32, weights [T,K] bf16.',
  inputs: [{ name: 'logits', dtypes: ['bf16'] }],
  outputs: [
    { name: 'ids', dtypes: ['i32'] },
    { name: 'weights', dtypes: ['bf16'] },
  ],
  attrs: { topK: 'int', normTopkProb: 'bool' },
});

export const moeExperts = defineOp({
  name: 'moeExperts',
  doc: 'Routed sum over experts [firstExpert, firstExpert+numLocal) (gateUp [numLocal*2I,H], down [numLocal*H,I] stacked): per routed (t,e), h = bf(bf(silu(g)) * u) of Linear(x_t, gate_up_e), o = Linear(h, down_e), acc_t += bf(o * w) in fp32, experts in ascending index. Output routed [T,H] f32, unrounded.',
  inputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'ids', dtypes: ['i32'] },
    { name: 'weights', dtypes: ['bf16'] },
    { name: 'gateUp', dtypes: ['bf16'] },
    { name: 'down', dtypes: ['bf16'] },
  ],
  outputs: [{ name: 'routed', dtypes: ['f32'] }],
  attrs: { firstExpert: 'int', numLocal: 'int', intermediate: 'int' },
});

export const moeSwiGlu = defineOp({
  name: 'moeSwiGlu',
  doc: 'h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)] -> [T,I].',
  inputs: [{ name: 'gateUp', dtypes: ['bf16'] }],
  outputs: [{ name: 'h', dtypes: ['bf16'] }],
  attrs: {},
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
});

export const MOE_OPS = [moeRoute, moeExperts, moeSwiGlu, moeCombine] as const;
