import type { Tensor } from '../../tensor/tensor.ts';
import type { CpuCollectiveKernel, CpuKernel, CpuKernelTable } from '../cpuKernel.ts';
import { allReduce } from '../../collectives/allReduce.ts';
import { reduceScatter } from '../../collectives/reduceScatter.ts';
import { allGather, padRows, shardTensorRows, trimRows } from '../../collectives/allGather.ts';
import type { ReduceAlgorithm } from '../../graph/ops/spOps.ts';
import { numAttrs } from './kernelArgs.ts';

// CPU reference kernels of the SP ops (graph/ops/spOps.ts): the collectives run every
// rank's buffers in one process, in lockstep (inputs[rank][port] -> outputs[rank][port]).

/** Port 0 of every rank (each collective has the single input port x). */
const portX = (inputs: Tensor[][]): Tensor[] => inputs.map((ports) => ports[0]);

const allReduceKernel: CpuCollectiveKernel = (inputs, attrs) => {
  const { channels, chunkElems } = numAttrs(attrs);
  return allReduce(portX(inputs), { algorithm: attrs.algorithm as ReduceAlgorithm, channels, chunkElems }).map((y) => [y]);
};

const reduceScatterKernel: CpuCollectiveKernel = (inputs, attrs) => reduceScatter(portX(inputs), attrs.algorithm as ReduceAlgorithm).map((y) => [y]);

const allGatherKernel: CpuCollectiveKernel = (inputs) => allGather(portX(inputs)).map((y) => [y]);

const shardKernel: CpuKernel = ([x], attrs) => {
  const { rank, tp, chunk } = numAttrs(attrs);
  return [shardTensorRows(x!, rank, tp, chunk)];
};

const padKernel: CpuKernel = ([x], attrs) => [padRows(x!, numAttrs(attrs).rows)];

const trimKernel: CpuKernel = ([x], attrs) => [trimRows(x!, numAttrs(attrs).rows)];

export const collectiveKernels: CpuKernelTable = {
  collective: { allReduce: allReduceKernel, reduceScatter: reduceScatterKernel, allGather: allGatherKernel },
  perRank: { shard: shardKernel, pad: padKernel, trim: trimKernel },
};
