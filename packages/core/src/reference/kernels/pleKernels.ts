import { pleNgramIds } from '../../layers/ple/pleHash.ts';
import { pleConvSilu, pleGate, pleGatedValue, pleNgramEmbed, pleNgramEmbedShard, pleRms1pNorm } from '../../layers/ple/pleMath.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';

export const pleKernels: CpuKernelTable = {
  perRank: {
    pleNgramIds: ([tokens], attrs) => {
      const vocabSizes = attrs.vocabSizes as number[];
      const ids = pleNgramIds(tokens!.data as Int32Array, {
        ngramSize: attrs.ngramSize as number,
        headsPerNgram: attrs.headsPerNgram as number,
        // decimal strings (the values exceed 2^53): the hash's int64 values
        multipliers: (attrs.multipliers as string[]).map((m) => BigInt(m)),
        vocabSizes,
        offsets: attrs.offsets as number[],
        vocabSize: attrs.vocabSize as number,
        eosTokenId: attrs.eosTokenId as number,
      });
      return [{ dtype: 'i32', shape: [tokens!.shape[0], vocabSizes.length], data: ids }];
    },
    pleNgramEmbed: ([ids, table]) => {
      const [T, heads] = ids!.shape;
      const headDim = table!.shape[1];
      const e = pleNgramEmbed(ids!.data as Int32Array, heads, table!.data as Uint16Array, headDim);
      return [{ dtype: 'bf16', shape: [T, heads * headDim], data: e }];
    },
    pleNgramEmbedShard: ([ids, slice], attrs) => {
      const [T, heads] = ids!.shape;
      const headDim = slice!.shape[1];
      const e = pleNgramEmbedShard(ids!.data as Int32Array, heads, slice!.data as Uint16Array, headDim, attrs.rowStart as number, attrs.tableRows as number);
      return [{ dtype: 'bf16', shape: [T, heads * headDim], data: e }];
    },
    pleRms1pNorm: ([x, weight], attrs) => {
      const [T, width] = x!.shape;
      const groups = attrs.groups as number;
      const y = pleRms1pNorm(x!.data as Uint16Array, T, groups, width / groups, weight!.data as Uint16Array, attrs.eps as number);
      return [{ dtype: 'bf16', shape: [T, width], data: y }];
    },
    pleGate: ([k, q], attrs) => {
      const [T, width] = k!.shape;
      const streams = attrs.streams as number;
      const gate = pleGate(k!.data as Uint16Array, q!.data as Uint16Array, T, streams, width / streams);
      return [{ dtype: 'bf16', shape: [T, streams], data: gate }];
    },
    pleGatedValue: ([gate, value], attrs) => {
      const [T, H] = value!.shape;
      const streams = attrs.streams as number;
      return [{ dtype: 'bf16', shape: [T, streams * H], data: pleGatedValue(gate!.data as Uint16Array, value!.data as Uint16Array, T, streams, H) }];
    },
    pleConvSilu: ([gNormed, g, weight], attrs) => {
      const [T, C] = g!.shape;
      const out = pleConvSilu(
        gNormed!.data as Uint16Array,
        g!.data as Uint16Array,
        weight!.data as Uint16Array,
        T,
        C,
        weight!.shape[2],
        attrs.dilation as number,
      );
      return [{ dtype: 'bf16', shape: [T, C], data: out }];
    },
  },
};
