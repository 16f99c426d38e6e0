import { pleNgramIds } from '../../layers/ple/pleHash.ts';
import { pleConvSilu, pleGate, pleGatedValue, pleNgramEmbed, pleRmsNorm } from '../../layers/ple/pleMath.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';
import { dims2 } from './kernelArgs.ts';

function divide(width: number, parts: number, what: string): number {
  if (!Number.isInteger(parts) || parts < 1 || width % parts !== 0) throw new Error(`${what}: width ${width} is not divisible into ${parts} groups`);
  return width / parts;
}

export const pleKernels: CpuKernelTable = {
  perRank: {
    pleNgramIds: ([tokens], attrs) => {
      if (tokens!.shape.length !== 1) throw new Error(`pleNgramIds: tokens must be [T], got ${shapeStr(tokens!.shape)}`);
      const vocabSizes = attrs.vocabSizes as number[];
      const ids = pleNgramIds(tokens!.data as Int32Array, {
        ngramSize: attrs.ngramSize as number,
        headsPerNgram: attrs.headsPerNgram as number,
        vocabSizes,
        vocabSize: attrs.vocabSize as number,
        eosTokenId: attrs.eosTokenId as number,
      });
      return [{ dtype: 'i32', shape: [tokens!.shape[0], vocabSizes.length], data: ids }];
    },
    pleNgramEmbed: ([ids, tables], attrs) => {
      const [T, heads] = dims2(ids!, 'pleNgramEmbed ids');
      const [, headDim] = dims2(tables!, 'pleNgramEmbed tables');
      const vocabSizes = attrs.vocabSizes as number[];
      if (vocabSizes.length !== heads) throw new Error(`pleNgramEmbed: ids have ${heads} heads, vocabSizes lists ${vocabSizes.length}`);
      const e = pleNgramEmbed(ids!.data as Int32Array, tables!.data as Uint16Array, vocabSizes, headDim);
      return [{ dtype: 'bf16', shape: [T, heads * headDim], data: e }];
    },
    pleRmsNorm: ([x, weight], attrs) => {
      const [T, width] = dims2(x!, 'pleRmsNorm x');
      const groups = attrs.groups as number;
      const y = pleRmsNorm(x!.data as Uint16Array, T, groups, divide(width, groups, 'pleRmsNorm'), weight!.data as Uint16Array, attrs.eps as number);
      return [{ dtype: 'bf16', shape: [T, width], data: y }];
    },
    pleGate: ([q, k], attrs) => {
      const [T, width] = dims2(q!, 'pleGate q');
      const streams = attrs.streams as number;
      const gate = pleGate(q!.data as Uint16Array, k!.data as Uint16Array, T, streams, divide(width, streams, 'pleGate'));
      return [{ dtype: 'f32', shape: [T, streams], data: gate }];
    },
    pleGatedValue: ([gate, value], attrs) => {
      const [T, H] = dims2(value!, 'pleGatedValue value');
      const streams = attrs.streams as number;
      return [{ dtype: 'bf16', shape: [T, streams * H], data: pleGatedValue(gate!.data as Float32Array, value!.data as Uint16Array, T, streams, H) }];
    },
    pleConvSilu: ([gNormed, g, weight], attrs) => {
      const [T, C] = dims2(g!, 'pleConvSilu g');
      if (weight!.shape.length !== 3 || weight!.shape[0] !== C || weight!.shape[1] !== 1) {
        throw new Error(`pleConvSilu: weight ${shapeStr(weight!.shape)} is not [${C}, 1, K]`);
      }
      const out = pleConvSilu(gNormed!.data as Uint16Array, g!.data as Uint16Array, weight!.data as Uint16Array, T, C, weight!.shape[2], attrs.dilation as number);
      return [{ dtype: 'bf16', shape: [T, C], data: out }];
    },
  },
};
