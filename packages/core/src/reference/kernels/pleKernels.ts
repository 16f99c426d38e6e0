import { pleNgramIds } from '../../layers/ple/pleHash.ts';
import { pleConvSilu, pleGate, pleGatedValue, pleNgramEmbed, pleNgramEmbedShard, pleRms1pNorm } from '../../layers/ple/pleMath.ts';
import { shapeStr } from '../../tensor/tensor.ts';
import type { CpuKernelTable } from '../cpuKernel.ts';
import { dims2 } from './kernelArgs.ts';

function divide(width: number, parts: number, what: string): number {
  if (!Number.isInteger(parts) || parts < 1 || width % parts !== 0) throw new Error(`${what}: width ${width} is not divisible into ${parts} groups`);
  return width / parts;
}

/** The `multipliers` attribute (decimal strings: the values exceed 2^53) as the hash's int64 values. */
function multipliersOf(v: unknown): bigint[] {
  if (!Array.isArray(v) || !v.every((m) => typeof m === 'string' && /^(0|[1-9][0-9]*)$/.test(m))) {
    throw new Error(`pleNgramIds: attribute 'multipliers' must be decimal strings, got ${JSON.stringify(v)}`);
  }
  return v.map((m) => BigInt(m));
}

export const pleKernels: CpuKernelTable = {
  perRank: {
    pleNgramIds: ([tokens], attrs) => {
      if (tokens!.shape.length !== 1) throw new Error(`pleNgramIds: tokens must be [T], got ${shapeStr(tokens!.shape)}`);
      const vocabSizes = attrs.vocabSizes as number[];
      const ids = pleNgramIds(tokens!.data as Int32Array, {
        ngramSize: attrs.ngramSize as number,
        headsPerNgram: attrs.headsPerNgram as number,
        multipliers: multipliersOf(attrs.multipliers),
        vocabSizes,
        offsets: attrs.offsets as number[],
        vocabSize: attrs.vocabSize as number,
        eosTokenId: attrs.eosTokenId as number,
      });
      return [{ dtype: 'i32', shape: [tokens!.shape[0], vocabSizes.length], data: ids }];
    },
    pleNgramEmbed: ([ids, table]) => {
      const [T, heads] = dims2(ids!, 'pleNgramEmbed ids');
      const [, headDim] = dims2(table!, 'pleNgramEmbed table');
      const e = pleNgramEmbed(ids!.data as Int32Array, heads, table!.data as Uint16Array, headDim);
      return [{ dtype: 'bf16', shape: [T, heads * headDim], data: e }];
    },
    pleNgramEmbedShard: ([ids, slice], attrs) => {
      const [T, heads] = dims2(ids!, 'pleNgramEmbedShard ids');
      const [, headDim] = dims2(slice!, 'pleNgramEmbedShard table');
      const e = pleNgramEmbedShard(ids!.data as Int32Array, heads, slice!.data as Uint16Array, headDim, attrs.rowStart as number, attrs.tableRows as number);
      return [{ dtype: 'bf16', shape: [T, heads * headDim], data: e }];
    },
    pleRms1pNorm: ([x, weight], attrs) => {
      const [T, width] = dims2(x!, 'pleRms1pNorm x');
      const groups = attrs.groups as number;
      const y = pleRms1pNorm(x!.data as Uint16Array, T, groups, divide(width, groups, 'pleRms1pNorm'), weight!.data as Uint16Array, attrs.eps as number);
      return [{ dtype: 'bf16', shape: [T, width], data: y }];
    },
    pleGate: ([k, q], attrs) => {
      const [T, width] = dims2(k!, 'pleGate k');
      const streams = attrs.streams as number;
      const gate = pleGate(k!.data as Uint16Array, q!.data as Uint16Array, T, streams, divide(width, streams, 'pleGate'));
      return [{ dtype: 'bf16', shape: [T, streams], data: gate }];
    },
    pleGatedValue: ([gate, value], attrs) => {
      const [T, H] = dims2(value!, 'pleGatedValue value');
      const streams = attrs.streams as number;
      return [{ dtype: 'bf16', shape: [T, streams * H], data: pleGatedValue(gate!.data as Uint16Array, value!.data as Uint16Array, T, streams, H) }];
    },
    pleConvSilu: ([gNormed, g, weight], attrs) => {
      const [T, C] = dims2(g!, 'pleConvSilu g');
      if (weight!.shape.length !== 3 || weight!.shape[0] !== C || weight!.shape[1] !== 1) {
        throw new Error(`pleConvSilu: weight ${shapeStr(weight!.shape)} is not [${C}, 1, K]`);
      }
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
