import { topkIndices, topkTiesOf } from '../../numerics/topkTies.ts';
import { dims2, floatInput } from './exactInputs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

// Float64 kernels of the MoE ops (graph/ops/moeOps.ts): the math of layers/moe/moeMath.ts
// (and the `linear` GEMMs it calls inside moeExperts) in plain double arithmetic, with none
// of its roundings (no Math.fround, no bf16 rounding of the routing weights, of the expert
// GEMM outputs, of the SwiGLU or of the weighted contributions; expF32/sigmoidF32/siluF32 ->
// Math.exp and their double formulas). The algorithm stays: the max-subtracted softmax over
// experts, the top-k decided on the float64 probabilities with the reference's rule (largest
// first, ties to the lower expert index, or the op's `ties` 'torch-cpu' rule), norm_topk_prob over the chosen k, the routed sum
// over a rank's own experts only (a TP/EP partial: no reduction inside).

function int(attrs: Record<string, unknown>, name: string, op: string): number {
  const v = attrs[name];
  if (!Number.isSafeInteger(v)) throw new Error(`${op}: attribute '${name}' must be an integer, got ${String(v)}`);
  return v as number;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

export const moeExact: ExactKernelTable = {
  perRank: {
    moeRoute: (inputs, attrs) => {
      const op = 'moeRoute';
      const logits = floatInput(inputs, 0, 'logits', op);
      const [T, E] = dims2(logits, 'moeRoute logits');
      const topK = int(attrs, 'topK', op);
      if (topK < 1 || topK > E) throw new Error(`${op}: topK ${topK} must be in [1, ${E}]`);
      const norm = attrs.normTopkProb;
      if (typeof norm !== 'boolean') throw new Error(`${op}: attribute 'normTopkProb' must be true or false`);
      const ties = topkTiesOf(attrs);
      const ids = new Int32Array(T * topK);
      const weights = new Float64Array(T * topK);
      const p = new Float64Array(E);
      for (let t = 0; t < T; t++) {
        const row = logits.data.subarray(t * E, (t + 1) * E);
        let max = -Infinity;
        for (let e = 0; e < E; e++) max = Math.max(max, row[e]);
        let sum = 0;
        for (let e = 0; e < E; e++) {
          p[e] = Math.exp(row[e] - max);
          sum += p[e];
        }
        for (let e = 0; e < E; e++) p[e] /= sum;
        // the reference's rule on the float64 probabilities
        const rowIds = ids.subarray(t * topK, (t + 1) * topK);
        rowIds.set(topkIndices(p, topK, ties));
        let chosen = 0;
        for (let k = 0; k < topK; k++) {
          weights[t * topK + k] = p[rowIds[k]];
          chosen += p[rowIds[k]];
        }
        if (norm) for (let k = 0; k < topK; k++) weights[t * topK + k] /= chosen;
      }
      return [
        { dtype: 'i32', shape: [T, topK], data: ids },
        { dtype: 'bf16', shape: [T, topK], data: weights },
      ];
    },
    // routed[t] = sum over the token's chosen experts this rank owns of w * down(swiglu(gate_up(x_t)))
    moeExperts: (inputs, attrs) => {
      const op = 'moeExperts';
      const x = floatInput(inputs, 0, 'x', op);
      const idsT = inputs[1];
      if (!idsT || !(idsT.data instanceof Int32Array)) throw new Error(`${op}: input 'ids' must be i32`);
      const w = floatInput(inputs, 2, 'weights', op);
      const gateUp = floatInput(inputs, 3, 'gateUp', op);
      const down = floatInput(inputs, 4, 'down', op);
      const [T, H] = dims2(x, 'moeExperts x');
      const [idRows, topK] = dims2(idsT, 'moeExperts ids');
      if (idRows !== T || w.shape.join(',') !== idsT.shape.join(','))
        throw new Error(`${op}: x [${x.shape.join(',')}], ids [${idsT.shape.join(',')}] and weights [${w.shape.join(',')}] do not match`);
      const first = int(attrs, 'firstExpert', op);
      const numLocal = int(attrs, 'numLocal', op);
      const I = int(attrs, 'intermediate', op);
      if (gateUp.data.length !== numLocal * 2 * I * H)
        throw new Error(`${op}: stacked gate_up has ${gateUp.data.length} values, expected ${numLocal} x ${2 * I} x ${H}`);
      if (down.data.length !== numLocal * H * I) throw new Error(`${op}: stacked down has ${down.data.length} values, expected ${numLocal} x ${H} x ${I}`);
      const ids = idsT.data;
      const routed = new Float64Array(T * H);
      const gu = new Float64Array(2 * I);
      const h = new Float64Array(I);
      // experts in ascending index, tokens ascending (the order does not matter at this precision)
      for (let local = 0; local < numLocal; local++) {
        const wGu = local * 2 * I * H;
        const wD = local * H * I;
        for (let t = 0; t < T; t++) {
          for (let k = 0; k < topK; k++) {
            if (ids[t * topK + k] - first !== local) continue;
            for (let j = 0; j < 2 * I; j++) {
              let a = 0;
              for (let c = 0; c < H; c++) a += x.data[t * H + c] * gateUp.data[wGu + j * H + c];
              gu[j] = a;
            }
            for (let i = 0; i < I; i++) h[i] = silu(gu[i]) * gu[I + i];
            const wk = w.data[t * topK + k];
            for (let j = 0; j < H; j++) {
              let o = 0;
              for (let i = 0; i < I; i++) o += h[i] * down.data[wD + j * I + i];
              routed[t * H + j] += o * wk;
            }
          }
        }
      }
      return [{ dtype: 'f32', shape: [T, H], data: routed }];
    },
    // moeExperts on the dequantized operands (q * s per row): the exact evaluation does not
    // quantize (quantExact.ts), so h is not quantized either and no scale order applies
    moeExpertsFp8Ptpc: (inputs, attrs) => {
      const op = 'moeExpertsFp8Ptpc';
      const format = attrs.format;
      if (format !== 'e4m3fn' && format !== 'e4m3fnuz') throw new Error(`${op}: format must be 'e4m3fn' or 'e4m3fnuz', got '${String(format)}'`);
      const deq = (qi: number, qName: string, si: number): ExactTensor => {
        const q = floatInput(inputs, qi, qName, op);
        const s = floatInput(inputs, si, `${qName} scales`, op);
        const [rows, cols] = dims2(q, `${op} ${qName}`);
        if (s.shape.length !== 1 || s.shape[0] !== rows) throw new Error(`${op}: ${qName} scales must be [${rows}], got [${s.shape.join(',')}]`);
        const v = new Float64Array(rows * cols);
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) v[r * cols + c] = q.data[r * cols + c] * s.data[r];
        return { dtype: 'bf16', shape: [rows, cols], data: v };
      };
      const x = deq(0, 'xq', 1);
      const gateUp = deq(4, 'qGateUp', 5);
      const down = deq(6, 'qDown', 7);
      return moeExact.perRank!.moeExperts!([x, inputs[2], inputs[3], gateUp, down], attrs);
    },
    // h = silu(gate) * up of rows [gate (I) | up (I)]
    moeSwiGlu: (inputs) => {
      const op = 'moeSwiGlu';
      const gu = floatInput(inputs, 0, 'gateUp', op);
      const [T, twoI] = dims2(gu, 'moeSwiGlu gateUp');
      if (twoI % 2 !== 0) throw new Error(`${op}: gate_up width ${twoI} is odd (expected [gate | up])`);
      const I = twoI / 2;
      const h = new Float64Array(T * I);
      for (let t = 0; t < T; t++) for (let i = 0; i < I; i++) h[t * I + i] = silu(gu.data[t * twoI + i]) * gu.data[t * twoI + I + i];
      return [{ dtype: 'bf16', shape: [T, I], data: h }];
    },
    // y = routed + shared * sigmoid(gateLogit)
    moeCombine: (inputs) => {
      const op = 'moeCombine';
      const routed = floatInput(inputs, 0, 'routed', op);
      const shared = floatInput(inputs, 1, 'shared', op);
      const gl = floatInput(inputs, 2, 'gateLogit', op);
      const [T, H] = dims2(routed, 'moeCombine routed');
      if (shared.data.length !== T * H || gl.data.length !== T)
        throw new Error(`${op}: shared [${shared.shape.join(',')}] / gateLogit [${gl.shape.join(',')}] do not fit routed [${T},${H}]`);
      const y = new Float64Array(T * H);
      for (let t = 0; t < T; t++) {
        const g = sigmoid(gl.data[t]);
        for (let j = 0; j < H; j++) y[t * H + j] = routed.data[t * H + j] + shared.data[t * H + j] * g;
      }
      return [{ dtype: 'bf16', shape: [T, H], data: y }];
    },
  },
};
