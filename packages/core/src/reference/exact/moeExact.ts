import { topkIndices, topkTiesOf } from '../../numerics/topkTies.ts';
import type { F64Tensor, I32Tensor } from './exactInputs.ts';
import { numAttrs } from '../kernels/kernelArgs.ts';
import type { ExactKernelTable, ExactTensor } from './exactTensor.ts';

// Float64 kernels of the MoE ops (graph/ops/moeOps.ts): the math of layers/moe/moeMath.ts
// (and the `linear` GEMMs it calls inside moeExperts) in plain double arithmetic, with none
// of its roundings (no Math.fround, no bf16 rounding of the routing weights, of the expert
// GEMM outputs, of the SwiGLU or of the weighted contributions; expF32/sigmoidF32/siluF32 ->
// Math.exp and their double formulas). The algorithm stays: the max-subtracted softmax over
// experts, the top-k decided on the float64 probabilities with the reference's rule (largest
// first, ties to the lower expert index, or the op's `ties` 'torch-cpu' rule), norm_topk_prob over the chosen k, the routed sum
// over a rank's own experts only (a TP/EP partial: no reduction inside).

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

export const moeExact: ExactKernelTable = {
  perRank: {
    moeRoute: (inputs, attrs) => {
      const logits = inputs[0] as F64Tensor;
      const [T, E] = logits.shape;
      const topK = numAttrs(attrs).topK;
      const norm = attrs.normTopkProb as boolean;
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
      const [x, , w, gateUp, down] = inputs as F64Tensor[];
      const ids = (inputs[1] as I32Tensor).data;
      const [T, H] = x.shape;
      const topK = inputs[1]!.shape[1];
      const { firstExpert: first, numLocal, intermediate: I } = numAttrs(attrs);
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
      const deq = (qi: number, si: number): ExactTensor => {
        const q = inputs[qi] as F64Tensor;
        const s = inputs[si] as F64Tensor;
        const [rows, cols] = q.shape;
        const v = new Float64Array(rows * cols);
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) v[r * cols + c] = q.data[r * cols + c] * s.data[r];
        return { dtype: 'bf16', shape: [rows, cols], data: v };
      };
      const x = deq(0, 1);
      const gateUp = deq(4, 5);
      const down = deq(6, 7);
      return moeExact.perRank!.moeExperts!([x, inputs[2], inputs[3], gateUp, down], attrs);
    },
    // h = silu(gate) * up of rows [gate (I) | up (I)]
    moeSwiGlu: (inputs) => {
      const gu = inputs[0] as F64Tensor;
      const [T, twoI] = gu.shape;
      const I = twoI / 2;
      const h = new Float64Array(T * I);
      for (let t = 0; t < T; t++) for (let i = 0; i < I; i++) h[t * I + i] = silu(gu.data[t * twoI + i]) * gu.data[t * twoI + I + i];
      return [{ dtype: 'bf16', shape: [T, I], data: h }];
    },
    // y = routed + shared * sigmoid(gateLogit)
    moeCombine: (inputs) => {
      const [routed, shared, gl] = inputs as F64Tensor[];
      const [T, H] = routed.shape;
      const y = new Float64Array(T * H);
      for (let t = 0; t < T; t++) {
        const g = sigmoid(gl.data[t]);
        for (let j = 0; j < H; j++) y[t * H + j] = routed.data[t * H + j] + shared.data[t * H + j] * g;
      }
      return [{ dtype: 'bf16', shape: [T, H], data: y }];
    },
  },
};
