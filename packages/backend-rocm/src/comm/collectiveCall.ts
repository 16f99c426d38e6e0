import { checkReduceAlgorithm, getOpDef, numel, shapeStr, type DType, type GraphNode, type ReduceAlgorithm, type Tensor, type TensorData } from '@hcsp/core';

// One collective node of a rank's graph as one call of a process-per-rank communicator
// (ncclCommunicator.ts, mpiCommunicator.ts): the node's layout (OpDef.collective: replicate =
// all-reduce, scatterRows = reduce-scatter, gatherRows = all-gather), this rank's one input x
// checked, the library's call, and the output tensor (port y) built from the bytes it returns.

/** the dtypes an all-gather moves (reductions take bf16 only) */
export const GATHER_DTYPES: readonly DType[] = ['bf16', 'f32', 'i32'];

/** One rank's three collectives over the library; each returns the result's bytes. */
export interface RankCollectives {
  /** names the communicator in errors: "NCCL communicator" */
  readonly name: string;
  /** names what returned the bytes in errors: "the addon" */
  readonly source: string;
  readonly rank: number;
  readonly tp: number;
  allGather(x: Tensor, node: GraphNode): Promise<ArrayBuffer>;
  /** algorithm: the node's, checked */
  allReduce(data: Uint16Array, algorithm: ReduceAlgorithm, node: GraphNode): Promise<ArrayBuffer>;
  reduceScatter(data: Uint16Array, algorithm: ReduceAlgorithm, node: GraphNode): Promise<ArrayBuffer>;
}

function tensorOf(dtype: DType, shape: number[], buf: ArrayBuffer): Tensor {
  const data: TensorData =
    dtype === 'bf16' ? new Uint16Array(buf) : dtype === 'f32' ? new Float32Array(buf) : dtype === 'i32' ? new Int32Array(buf) : new Uint8Array(buf);
  return { dtype, shape, data };
}

/** runs `node` on this rank's inputs through `c`, by the node's layout; its one output */
export async function runCollective(c: RankCollectives, node: GraphNode, inputs: Tensor[]): Promise<Tensor[]> {
  const layout = getOpDef(node.op).collective;
  if (!layout) throw new Error(`${c.name}: node ${node.id} (${node.op}) is not a collective`);
  if (inputs.length !== 1 || !inputs[0]) throw new Error(`${node.op}: expects this rank's one input x, got ${inputs.length} inputs`);
  const x = inputs[0];
  if (x.shape.length === 0) throw new Error(`${node.op}: tensors need a leading (row) dimension, got shape []`);
  const rows = x.shape[0];
  if (layout === 'gatherRows') {
    if (!GATHER_DTYPES.includes(x.dtype)) throw new Error(`${node.op}: rank ${c.rank} has dtype ${x.dtype}; expected one of ${GATHER_DTYPES.join(', ')}`);
    const buf = await c.allGather(x, node);
    return [tensorOf(x.dtype, [rows * c.tp, ...x.shape.slice(1)], buf)];
  }
  if (x.dtype !== 'bf16') throw new Error(`${node.op}: rank ${c.rank} has dtype ${x.dtype}; expected one of bf16`);
  const algorithm = checkReduceAlgorithm(node.attrs.algorithm, node.op);
  const data = x.data as Uint16Array;
  if (layout === 'replicate') {
    const buf = await c.allReduce(data, algorithm, node);
    return [tensorOf('bf16', [...x.shape], buf)];
  }
  if (rows % c.tp !== 0) throw new Error(`${node.op}: ${rows} rows of shape ${shapeStr(x.shape)} are not divisible by tp ${c.tp}`);
  const buf = await c.reduceScatter(data, algorithm, node);
  const out = tensorOf('bf16', [rows / c.tp, ...x.shape.slice(1)], buf);
  if (out.data.length !== numel(out.shape)) throw new Error(`${node.op}: ${c.source} returned ${out.data.length} elements for ${shapeStr(out.shape)}`);
  return [out];
}
