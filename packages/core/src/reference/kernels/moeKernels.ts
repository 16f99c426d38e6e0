import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { moeCombine, moeRoute, moeRoutedSum, moeSwiGlu } from '../../layers/moe/moeMath.ts';
import { moeRoutedSumFp8 } from '../../layers/moe/moeFp8Math.ts';
import type { PtpcScaleOrder } from '../../layers/fp8Linear.ts';
import type { Fp8Format } from '../../numerics/fp8.ts';
import type { QuantStyle } from '../../numerics/quant.ts';
import { topkTiesOf } from '../../numerics/topkTies.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

export const moeKernels: CpuKernelTable = {
  perRank: {
    moeRoute: ([logits], attrs) => {
      const [T, E] = logits!.shape;
      const topK = attrs.topK as number;
      const r = moeRoute(logits!.data as Uint16Array, T, E, topK, attrs.normTopkProb as boolean, topkTiesOf(attrs));
      return [
        { dtype: 'i32', shape: [T, topK], data: r.ids },
        { dtype: 'bf16', shape: [T, topK], data: r.weights },
      ];
    },
    moeExperts: ([x, ids, weights, gateUp, down], attrs) => {
      const [T, H] = x!.shape;
      const topK = ids!.shape[1];
      const routed = moeRoutedSum(
        bf16ArrayToF32(x!.data as Uint16Array),
        T,
        H,
        { ids: ids!.data as Int32Array, weights: weights!.data as Uint16Array },
        topK,
        {
          firstExpert: attrs.firstExpert as number,
          numLocal: attrs.numLocal as number,
          intermediate: attrs.intermediate as number,
          gateUp: bf16ArrayToF32(gateUp!.data as Uint16Array),
          down: bf16ArrayToF32(down!.data as Uint16Array),
        },
        attrs.bf16Accumulate === true,
      );
      return [{ dtype: 'f32', shape: [T, H], data: routed }];
    },
    moeExpertsFp8Ptpc: ([xq, sx, ids, weights, qGateUp, sGateUp, qDown, sDown], attrs) => {
      const [T, H] = xq!.shape;
      const topK = ids!.shape[1];
      const routed = moeRoutedSumFp8(
        xq!.data as Uint8Array,
        sx!.data as Float32Array,
        T,
        H,
        { ids: ids!.data as Int32Array, weights: weights!.data as Uint16Array },
        topK,
        {
          firstExpert: attrs.firstExpert as number,
          numLocal: attrs.numLocal as number,
          intermediate: attrs.intermediate as number,
          qGateUp: qGateUp!.data as Uint8Array,
          sGateUp: sGateUp!.data as Float32Array,
          qDown: qDown!.data as Uint8Array,
          sDown: sDown!.data as Float32Array,
        },
        { format: attrs.format as Fp8Format, style: attrs.style as QuantStyle, order: attrs.scaleOrder as PtpcScaleOrder },
      );
      return [{ dtype: 'f32', shape: [T, H], data: routed }];
    },
    moeSwiGlu: ([gateUp]) => {
      const [T, twoI] = gateUp!.shape;
      return [{ dtype: 'bf16', shape: [T, twoI / 2], data: moeSwiGlu(gateUp!.data as Uint16Array, T, twoI / 2) }];
    },
    moeCombine: ([routed, shared, gateLogit]) => {
      const [T, H] = routed!.shape;
      const y = moeCombine(routed!.data as Float32Array, shared!.data as Uint16Array, gateLogit!.data as Uint16Array, T, H);
      return [{ dtype: 'bf16', shape: [T, H], data: y }];
    },
  },
};
