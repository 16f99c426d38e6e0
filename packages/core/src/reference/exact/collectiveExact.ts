// Float64 kernels of the SP ops (graph/ops/spOps.ts), after reference/kernels/collectiveKernels.ts:
// the summing collectives are the exact sum of the ranks' partials in double, added in rank
// order 0..tp-1 whatever `algorithm`, `channels` and `chunkElems` say (those only choose the
// order of the reference's bf16/fp32 additions; in double the order moves a sum by a few units
// of 2^-53 of the sum of |terms|, far below anything a bf16 or fp32 backend can show).
// The layouts are OpDef.collective's: allReduce replicates the sum (all-reduce), reduceScatter
// gives rank r its rows [r*C, (r+1)*C) of it (reduce-scatter), allGather concatenates the
// shards in rank order (all-gather). shard, pad and trim are exact copies (zero rows for padding).
import { numel, shapeStr } from '../../tensor/tensor.ts';
import { allocExact } from './basicExact.ts';
import type { F64Tensor } from './exactInputs.ts';
import { numAttrs } from '../kernels/kernelArgs.ts';
import type { ExactCollectiveKernel, ExactKernel, ExactKernelTable, ExactTensor } from './exactTensor.ts';

/** Port 0 of every rank, all of one shape and dtype (each rank's declaration check sees only its own). */
function portX(inputs: ExactTensor[][], op: string): ExactTensor[] {
  const xs = inputs.map((ports) => ports[0]);
  for (const [r, x] of xs.entries()) {
    if (x.dtype !== xs[0].dtype || shapeStr(x.shape) !== shapeStr(xs[0].shape)) {
      throw new Error(`${op}: rank ${r} has ${x.dtype}${shapeStr(x.shape)}, rank 0 ${xs[0].dtype}${shapeStr(xs[0].shape)}`);
    }
  }
  return xs;
}

/** sum_r x_r in double, rank order. */
function rankSum(xs: ExactTensor[]): Float64Array {
  const sum = new Float64Array(xs[0].data.length);
  for (const x of xs as F64Tensor[]) for (let i = 0; i < sum.length; i++) sum[i] += x.data[i];
  return sum;
}

const rowLength = (t: ExactTensor): number => numel(t.shape.slice(1));

const allReduceExact: ExactCollectiveKernel = (inputs) => {
  const xs = portX(inputs, 'allReduce');
  const sum = rankSum(xs);
  return xs.map((x, r) => [{ dtype: 'bf16', shape: [...x.shape], data: r === 0 ? sum : sum.slice() }]);
};

const reduceScatterExact: ExactCollectiveKernel = (inputs) => {
  const xs = portX(inputs, 'reduceScatter');
  const c = xs[0].shape[0] / xs.length;
  const len = c * rowLength(xs[0]);
  const sum = rankSum(xs);
  return xs.map((x, r) => [{ dtype: 'bf16', shape: [c, ...x.shape.slice(1)], data: sum.slice(r * len, (r + 1) * len) }]);
};

const allGatherExact: ExactCollectiveKernel = (inputs) => {
  const xs = portX(inputs, 'allGather');
  const { dtype, shape } = xs[0];
  const n = xs[0].data.length;
  const gathered = allocExact(dtype, n * xs.length);
  xs.forEach((x, r) => {
    gathered.set(x.data as never, r * n);
  });
  return xs.map((_, r) => [{ dtype, shape: [shape[0] * xs.length, ...shape.slice(1)], data: r === 0 ? gathered : gathered.slice() }]);
};

const shardExact: ExactKernel = ([xT], attrs) => {
  const x = xT!;
  const { rank, chunk } = numAttrs(attrs);
  const rows = x.shape[0];
  const len = rowLength(x);
  const data = allocExact(x.dtype, chunk * len);
  const first = Math.min(rank * chunk, rows);
  const last = Math.min((rank + 1) * chunk, rows);
  data.set(x.data.subarray(first * len, last * len) as never, 0);
  return [{ dtype: x.dtype, shape: [chunk, ...x.shape.slice(1)], data }];
};

const padExact: ExactKernel = ([xT], attrs) => {
  const x = xT!;
  const rows = numAttrs(attrs).rows;
  const data = allocExact(x.dtype, rows * rowLength(x));
  data.set(x.data as never, 0);
  return [{ dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data }];
};

const trimExact: ExactKernel = ([xT], attrs) => {
  const x = xT!;
  const rows = numAttrs(attrs).rows;
  return [{ dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data: x.data.slice(0, rows * rowLength(x)) }];
};

export const collectiveExact: ExactKernelTable = {
  collective: { allReduce: allReduceExact, reduceScatter: reduceScatterExact, allGather: allGatherExact },
  perRank: { shard: shardExact, pad: padExact, trim: trimExact },
};
