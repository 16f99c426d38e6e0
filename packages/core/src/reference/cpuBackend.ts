import { exactPrecision, type Backend, type PreparedGraph } from '../backend/backend.ts';
import type { DeviceOps } from '../graph/deviceOps.ts';
import type { Graph, GraphNode, ValueDecl } from '../graph/graph.ts';
import { GraphSession, type SessionOptions } from '../graph/graphSession.ts';
import { resolveWeightRows } from '../model/resolveWeight.ts';
import type { WeightSource } from '../model/weightSource.ts';
import { shapeStr, type Tensor } from '../tensor/tensor.ts';
import { CPU_COLLECTIVE_KERNELS, CPU_KERNELS } from './kernels/index.ts';

function checkOut(t: Tensor | null, d: ValueDecl | null, op: string): Tensor | null {
  if (d === null) return null;
  if (!t) throw new Error(`op ${op} did not produce '${d.id}'`);
  if (shapeStr(t.shape) !== shapeStr(d.shape) || t.dtype !== d.dtype) {
    throw new Error(`op ${op} produced ${t.dtype}${shapeStr(t.shape)} for '${d.id}', declared ${d.dtype}${shapeStr(d.shape)}`);
  }
  return t;
}

/**
 * The reference kernels as a device: handles are host tensors; collectives take every rank's
 * buffer in lockstep. It runs a graph's nodes, which GraphSession checked against their
 * declarations at open, so it reads the kernel tables directly.
 */
export const CPU_DEVICE: DeviceOps<Tensor> = {
  upload: async (_decl, t) => t,
  runNode: async (node: GraphNode, inputs, _inputDecls, outputs) => {
    const out = CPU_KERNELS.get(node.op)(inputs, node.attrs);
    return outputs.map((d, p) => checkOut(out[p] ?? null, d, node.op));
  },
  runCollective: async (node, inputs, _inputDecls, outputs) => {
    const out = CPU_COLLECTIVE_KERNELS.get(node.op)(inputs, { ...node.attrs, tp: inputs.length });
    return outputs.map((ds, r) => ds.map((d, p) => checkOut(out[r][p], d, node.op)!));
  },
  download: async (_decl, t) => t,
  free: () => {},
};

/**
 * The CPU reference executor: the oracle every backend is tested against. It runs the
 * graph's nodes in order through core's one execution loop, all ranks in one process.
 */
export class CpuBackend implements Backend {
  readonly name = 'cpu';
  readonly precision = exactPrecision('the reference: every accumulation in the order the op declaration states');

  describe(): string {
    return 'cpu reference (this process, fp32 emulated with Math.fround)';
  }

  /** `session` carries a rank's communicator when the graph is one rank's part. */
  prepare(graph: Graph, weights: WeightSource, session: Partial<SessionOptions> = {}): Promise<PreparedGraph> {
    return GraphSession.open(graph, CPU_DEVICE, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), { backend: 'cpu', ...session });
  }

  async dispose(): Promise<void> {}
}
