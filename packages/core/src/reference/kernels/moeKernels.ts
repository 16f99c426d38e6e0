import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { moeCombine, moeRoute, moeRoutedSum, moeSwiGlu } from '../../layers/moe/moeMath.ts';
import { moeRoutedSumFp8 } from '../../layers/moe/moeFp8Math.ts';
import type { PtpcScaleOrder } from '../../layers/fp8Linear.ts';
import { type Fp8Format, fp8FormatOfDtype, fp8Info } from '../../numerics/fp8.ts';
import type { QuantStyle } from '../../numerics/quant.ts';
import { topkTiesOf } from '../../numerics/topkTies.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';
import { dims2 } from './kernelArgs.ts';

export const moeKernels: CpuKernelTable = {
  perRank: {
    moeRoute: ([logits], attrs) => {
      const [T, E] = dims2(logits!, 'moeRoute logits');
      const topK = attrs.topK as number;
      const r = moeRoute(logits!.data as Uint16Array, T, E, topK, attrs.normTopkProb as boolean, topkTiesOf(attrs));
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
      const op = 'moeExpertsFp8Ptpc';
      const format = attrs.format as Fp8Format;
      fp8Info(format);
      const style = attrs.style;
      if (style !== 'divide' && style !== 'reciprocal') throw new Error(`${op}: style must be 'divide' or 'reciprocal', got '${String(style)}'`);
      const [T, H] = dims2(xq!, `${op} xq`);
      const [idRows, topK] = dims2(ids!, `${op} ids`);
      if (idRows !== T || shapeStr(weights!.shape) !== shapeStr(ids!.shape)) {
        throw new Error(`${op}: xq ${shapeStr(xq!.shape)}, ids ${shapeStr(ids!.shape)} and weights ${shapeStr(weights!.shape)} do not match`);
      }
      for (const [t, name] of [
        [xq!, 'xq'],
        [qGateUp!, 'qGateUp'],
        [qDown!, 'qDown'],
      ] as const) {
        if (fp8FormatOfDtype(t.dtype) !== format) throw new Error(`${op}: ${name} is ${t.dtype}, expected ${fp8Info(format).dtype}`);
      }
      for (const [t, name] of [
        [sx!, 'sx'],
        [sGateUp!, 'sGateUp'],
        [sDown!, 'sDown'],
      ] as const) {
        if (t.dtype !== 'f32') throw new Error(`${op}: ${name} must be f32, got ${t.dtype}`);
      }
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
        { format, style: style as QuantStyle, order: attrs.scaleOrder as PtpcScaleOrder },
      );
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
