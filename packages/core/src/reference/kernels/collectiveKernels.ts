import type { Tensor } from '../../tensor/tensor.ts';
import type { CpuCollectiveKernel, CpuKernel, CpuKernelTable } from '../cpuKernel.ts';
import { allReduce } from '../../collectives/allReduce.ts';
import { reduceScatter } from '../../collectives/reduceScatter.ts';
import { allGather, padRows, shardTensorRows, trimRows } from '../../collectives/allGather.ts';
import { checkReduceAlgorithm } from '../../collectives/reduceOrder.ts';
import { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from '../../collectives/ringAllReduce.ts';

// CPU reference kernels of the SP ops (graph/ops/spOps.ts): the collectives run every
// rank's buffers in one process, in lockstep (inputs[rank][port] -> outputs[rank][port]).

function intAttr(attrs: Record<string, unknown>, name: string, op: string, fallback?: number): number {
  const v = attrs[name] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new Error(`${op}: attr ${name} must be an integer, got ${JSON.stringify(attrs[name])}`);
  }
  return v;
}

/** Port 0 of every rank (each collective has the single input port x). */
function portX(inputs: Tensor[][], op: string): Tensor[] {
  return inputs.map((ports, r) => {
    const x = ports[0];
    if (!x) throw new Error(`${op}: rank ${r} has no input x`);
    return x;
  });
}

function oneInput(inputs: (Tensor | null)[], op: string): Tensor {
  const x = inputs[0];
  if (!x) throw new Error(`${op}: input x is missing`);
  return x;
}

const allReduceKernel: CpuCollectiveKernel = (inputs, attrs) => {
  const algorithm = checkReduceAlgorithm(attrs.algorithm, 'allReduce');
  const outs = allReduce(portX(inputs, 'allReduce'), {
    algorithm,
    channels: intAttr(attrs, 'channels', 'allReduce', RING_DEFAULT_CHANNELS),
    chunkElems: intAttr(attrs, 'chunkElems', 'allReduce', RING_DEFAULT_CHUNK_ELEMS),
  });
  return outs.map((y) => [y]);
};

const reduceScatterKernel: CpuCollectiveKernel = (inputs, attrs) => {
  const algorithm = checkReduceAlgorithm(attrs.algorithm, 'reduceScatter');
  return reduceScatter(portX(inputs, 'reduceScatter'), algorithm).map((y) => [y]);
};

const allGatherKernel: CpuCollectiveKernel = (inputs) => allGather(portX(inputs, 'allGather')).map((y) => [y]);

const shardKernel: CpuKernel = (inputs, attrs) => [
  shardTensorRows(oneInput(inputs, 'shard'), intAttr(attrs, 'rank', 'shard'), intAttr(attrs, 'tp', 'shard'), intAttr(attrs, 'chunk', 'shard')),
];

const padKernel: CpuKernel = (inputs, attrs) => [padRows(oneInput(inputs, 'pad'), intAttr(attrs, 'rows', 'pad'))];

const trimKernel: CpuKernel = (inputs, attrs) => [trimRows(oneInput(inputs, 'trim'), intAttr(attrs, 'rows', 'trim'))];

export const collectiveKernels: CpuKernelTable = {
  collective: { allReduce: allReduceKernel, reduceScatter: reduceScatterKernel, allGather: allGatherKernel },
  perRank: { shard: shardKernel, pad: padKernel, trim: trimKernel },
};
