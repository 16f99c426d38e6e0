import type { Backend, RunOptions, RunResult } from '../backend/backend.ts';
import type { Graph, ValueId } from '../graph/graph.ts';
import { RunStatsCounter } from '../graph/runStatsCounter.ts';
import { validateFeeds } from '../graph/validateFeeds.ts';
import { lastUses } from '../graph/valueLifetimes.ts';
import { resolveWeight } from '../model/resolveWeight.ts';
import type { WeightSource } from '../model/weightSource.ts';
import { shapeStr, type Tensor } from '../tensor/tensor.ts';
import { cpuCollectiveKernel, cpuKernel } from './kernels/index.ts';

/**
 * The CPU reference executor: the oracle every backend is tested against. It runs the
 * graph's nodes in order, all ranks in one process; collectives take every rank's buffer
 * in lockstep (so no rank can wait on another and hang).
 */
export class CpuBackend implements Backend {
  readonly name = 'cpu';
  readonly precision = {
    reorderedMaxUlp: 0,
    note: 'the reference: every accumulation in the order the op declaration states',
  };

  describe(): string {
    return 'cpu reference (this process, fp32 emulated with Math.fround)';
  }

  async run(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options: RunOptions = {}): Promise<RunResult> {
    return this.runSync(graph, feeds, weights, options);
  }

  runSync(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options: RunOptions = {}): RunResult {
    const start = performance.now();
    validateFeeds(graph, feeds);
    const env = new Map<ValueId, Tensor>(graph.inputs.map((id) => [id, feeds.get(id)!]));
    const keepAll = options.keep === 'all';
    const keep = new Set<ValueId>([...graph.outputs, ...(Array.isArray(options.keep) ? options.keep : [])]);
    const last = lastUses(graph);
    const counter = new RunStatsCounter(graph);
    const read = (id: ValueId | null): Tensor | null => {
      if (id === null) return null;
      const have = env.get(id);
      if (have) return have;
      const decl = graph.values[id];
      if (decl?.kind !== 'weight' || !decl.weight) throw new Error(`cpu backend: value '${id}' is read before it is written`);
      const w = resolveWeight(weights, decl.weight);
      if (shapeStr(w.shape) !== shapeStr(decl.shape) || w.dtype !== decl.dtype) {
        throw new Error(`cpu backend: weight '${decl.weight.name}' resolves to ${w.dtype}${shapeStr(w.shape)}, the graph expects ${decl.dtype}${shapeStr(decl.shape)}`);
      }
      env.set(id, w);
      return w;
    };
    const write = (id: ValueId | null, t: Tensor | null, op: string): void => {
      if (id === null) return;
      if (!t) throw new Error(`cpu backend: op ${op} did not produce '${id}'`);
      const decl = graph.values[id];
      if (shapeStr(t.shape) !== shapeStr(decl.shape) || t.dtype !== decl.dtype) {
        throw new Error(`cpu backend: op ${op} produced ${t.dtype}${shapeStr(t.shape)} for '${id}', declared ${decl.dtype}${shapeStr(decl.shape)}`);
      }
      env.set(id, t);
      if (!keepAll && !last.has(id) && !keep.has(id)) env.delete(id);
    };

    graph.nodes.forEach((node, i) => {
      try {
        if (node.rank === null) {
          const ports = node.inputs.length / graph.tp;
          const outPorts = node.outputs.length / graph.tp;
          const perRank = Array.from({ length: graph.tp }, (_, r) => node.inputs.slice(r * ports, (r + 1) * ports).map((id) => read(id)!));
          const out = cpuCollectiveKernel(node.op)(perRank, { ...node.attrs, tp: graph.tp });
          for (let r = 0; r < graph.tp; r++) for (let p = 0; p < outPorts; p++) write(node.outputs[r * outPorts + p], out[r][p], node.op);
        } else {
          const out = cpuKernel(node.op)(node.inputs.map(read), node.attrs);
          node.outputs.forEach((id, p) => write(id, out[p] ?? null, node.op));
        }
      } catch (e) {
        throw new Error(`${node.scope} (${node.op}${node.rank === null ? '' : `, rank ${node.rank}`}): ${(e as Error).message}`);
      }
      counter.count(node);
      if (!keepAll) for (const id of node.inputs) if (id !== null && last.get(id) === i && !keep.has(id)) env.delete(id);
      options.onNode?.(i + 1, graph.nodes.length);
    });

    const values = new Map<ValueId, Tensor>();
    for (const id of keepAll ? env.keys() : keep) {
      const t = env.get(id);
      if (!t) throw new Error(`cpu backend: requested value '${id}' was never computed`);
      if (keepAll && graph.values[id]?.kind === 'weight') continue;
      values.set(id, t);
    }
    return { values, stats: counter.stats((performance.now() - start) / 1000) };
  }

  async dispose(): Promise<void> {}
}
