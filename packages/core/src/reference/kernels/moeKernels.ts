import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { moeCombine, moeRoute, moeRoutedSum, moeSwiGlu } from '../../layers/moe/moeMath.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';
import { dims2 } from './kernelArgs.ts';

export const moeKernels: CpuKernelTable = {
  perRank: {
    moeRoute: ([logits], attrs) => {
      const [T, E] = dims2(logits!, 'moeRoute logits');
      const topK = attrs.topK as number;
      const r = moeRoute(logits!.data as Uint16Array, T, E, topK, attrs.normTopkProb as boolean);
      return [
        { dtype: 'i32', shape: [T, topK], data: r.ids },
        { dtype: 'bf16', shape: [T, topK], data: r.weights },
      ];
    },
    moeExperts: ([x, ids, weights, gateUp, down], attrs) => {
      const [T, H] = dims2(x!, 'moeExperts x');
      const [idRows, topK] = dims2(ids!, 'moeExperts ids');
      if (idRows !== T || shapeStr(weights!.shape) !== shapeStr(ids!.shape)) {
        throw new Error(`moeExperts: x ${shapeStr(x!.shape)}, ids ${shapeStr(ids!.shape)} and weights ${shapeStr(weights!.shape)} do not match`);
      }
      const routed = moeRoutedSum(bf16ArrayToF32(x!.data as Uint16Array), T, H, { ids: ids!.data as Int32Array, weights: weights!.data as Uint16Array }, topK, {
        firstExpert: attrs.firstExpert as number,
        numLocal: attrs.numLocal as number,
        intermediate: attrs.intermediate as number,
        gateUp: bf16ArrayToF32(gateUp!.data as Uint16Array),
        down: bf16ArrayToF32(down!.data as Uint16Array),
      }, attrs.bf16Accumulate === true);
      return [{ dtype: 'f32', shape: [T, H], data: routed }];
    },
    moeSwiGlu: ([gateUp]) => {
      const [T, twoI] = dims2(gateUp!, 'moeSwiGlu gateUp');
      if (twoI % 2 !== 0) throw new Error(`moeSwiGlu: gate_up width ${twoI} is odd (expected [gate | up])`);
      return [{ dtype: 'bf16', shape: [T, twoI / 2], data: moeSwiGlu(gateUp!.data as Uint16Array, T, twoI / 2) }];
    },
    moeCombine: ([routed, shared, gateLogit]) => {
      const [T, H] = dims2(routed!, 'moeCombine routed');
      const y = moeCombine(routed!.data as Float32Array, shared!.data as Uint16Array, gateLogit!.data as Uint16Array, T, H);
      return [{ dtype: 'bf16', shape: [T, H], data: y }];
    },
  },
};
