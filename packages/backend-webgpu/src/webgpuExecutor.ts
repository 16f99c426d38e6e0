/// <reference types="@webgpu/types" />
import {
  cpuKernel,
  findOpDef,
  bytesPerElement,
  numel,
  RunStatsCounter,
  shapeStr,
  type Graph,
  type GraphNode,
  type RunResult,
  type Tensor,
  type ValueDecl,
  type ValueId,
} from '@hcsp/core';
import type { KernelPlan, KernelPlanner, TensorInfo } from '@hcsp/kernels-wgsl';
import { DeviceLostGuard } from './deviceLostGuard.ts';
import { BUFFER_COPY_DST, BUFFER_COPY_SRC, BUFFER_STORAGE, BUFFER_UNIFORM, GpuMemory } from './gpuMemory.ts';
import { PipelineCache } from './pipelineCache.ts';
import { tensorFromWordBytes, tensorWordBytes, wordBytesOf } from './tensorBytes.ts';

/** The host tensor behind a graph input or weight value (fed, or fetched by a page). */
export type HostTensorLoader = (decl: ValueDecl) => Promise<Tensor>;

export interface ExecutorRunOptions {
  /** also read back these values ('all': every value, small graphs only) */
  keep?: ValueId[] | 'all';
  onNode?: (done: number, total: number) => void;
}

// Validation-scope results are collected per node and awaited in batches: awaiting each
// one would cost a device round trip per node.
const CHECK_EVERY_NODES = 16;

const STORAGE_USAGE = BUFFER_STORAGE | BUFFER_COPY_SRC | BUFFER_COPY_DST;

interface PendingCheck {
  what: string;
  error: Promise<GPUError | null>;
}

/**
 * Runs a graph on one GPUDevice, in Node (dawn.node) or in a page (navigator.gpu). The tp
 * ranks are simulated on the one device: every rank-owned value has its own buffer; host
 * values (graph inputs, weights, rank null) are read-only and uploaded once for all ranks.
 * Nodes run in graph order; collectives stack the ranks' buffers into one [tp][words]
 * buffer and run their planner on it, in lockstep, so nothing can hang on a peer.
 */
export class WebGpuExecutor {
  private readonly ctx: RunContext;
  // runs share the error-scope stack, so they are serialized
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    device: GPUDevice,
    kernels: Readonly<Record<string, KernelPlanner>>,
    readonly host: string,
  ) {
    const guard = new DeviceLostGuard(device, host);
    this.ctx = { device, guard, memory: new GpuMemory(device, guard), pipelines: new PipelineCache(device, guard), kernels };
  }

  run(graph: Graph, load: HostTensorLoader, options: ExecutorRunOptions = {}): Promise<RunResult> {
    const result = this.queue.then(() => new GraphRun(this.ctx, graph, load, options).execute());
    this.queue = result.catch(() => {});
    return result;
  }
}

/** What every run of one executor shares: the device, its guards and the pipeline cache. */
interface RunContext {
  device: GPUDevice;
  guard: DeviceLostGuard;
  memory: GpuMemory;
  pipelines: PipelineCache;
  kernels: Readonly<Record<string, KernelPlanner>>;
}

/** One execution of a graph: its buffers, use counts and stats. */
class GraphRun {
  private readonly device: GPUDevice;
  private readonly guard: DeviceLostGuard;
  private readonly memory: GpuMemory;
  private readonly pipelines: PipelineCache;
  private readonly kernels: Readonly<Record<string, KernelPlanner>>;
  private readonly buffers = new Map<ValueId, GPUBuffer>();
  private readonly uses = new Map<ValueId, number>();
  private readonly requested: Set<ValueId>;
  private readonly checks: PendingCheck[] = [];
  // the same counter as the CPU reference, so every backend reports the same figures
  private readonly stats: RunStatsCounter;

  constructor(
    ctx: RunContext,
    private readonly graph: Graph,
    private readonly load: HostTensorLoader,
    private readonly options: ExecutorRunOptions,
  ) {
    ({ device: this.device, guard: this.guard, memory: this.memory, pipelines: this.pipelines, kernels: this.kernels } = ctx);
    const tp = graph.tp;
    if (!(Number.isInteger(tp) && tp >= 1)) throw new Error(`webgpu: graph tp ${tp} is not a positive integer`);
    for (const node of graph.nodes) {
      for (const id of [...node.inputs, ...node.outputs]) {
        if (id !== null && !graph.values[id]) throw new Error(`webgpu: node ${node.id} (${node.op} at ${node.scope}) uses undeclared value '${id}'`);
      }
      for (const id of node.inputs) if (id !== null) this.uses.set(id, (this.uses.get(id) ?? 0) + 1);
    }
    const keep = options.keep === 'all' ? Object.keys(graph.values) : (options.keep ?? []);
    this.requested = new Set([...graph.outputs, ...keep]);
    for (const id of this.requested) if (!graph.values[id]) throw new Error(`webgpu: requested value '${id}' is not in the graph`);
    this.stats = new RunStatsCounter(graph);
  }

  async execute(): Promise<RunResult> {
    const t0 = performance.now();
    try {
      const total = this.graph.nodes.length;
      for (let i = 0; i < total; i++) {
        const node = this.graph.nodes[i];
        if (node.rank === null) await this.runCollective(node);
        else if (findOpDef(node.op)?.host) await this.runOnHost(node);
        else await this.runPerRank(node);
        this.stats.count(node);
        this.release(node);
        if ((i + 1) % CHECK_EVERY_NODES === 0) await this.awaitChecks();
        this.options.onNode?.(i + 1, total);
      }
      await this.awaitChecks();
      const values = new Map<ValueId, Tensor>();
      for (const id of this.requested) values.set(id, await this.readBack(id));
      await this.guard.race(this.device.queue.onSubmittedWorkDone());
      return { values, stats: this.stats.stats((performance.now() - t0) / 1000) };
    } finally {
      for (const b of this.buffers.values()) b.destroy();
      this.buffers.clear();
    }
  }

  private decl(id: ValueId): ValueDecl {
    return this.graph.values[id];
  }

  /** The buffer of an existing value; host values are loaded and uploaded on first use. */
  private async bufferOf(id: ValueId): Promise<GPUBuffer> {
    const existing = this.buffers.get(id);
    if (existing) return existing;
    const decl = this.decl(id);
    if (decl.kind === 'intermediate') throw new Error(`webgpu: value '${id}' is read before any node produced it`);
    const t = await this.load(decl);
    if (t.dtype !== decl.dtype || shapeStr(t.shape) !== shapeStr(decl.shape)) {
      throw new Error(`webgpu: host value '${id}' is ${t.dtype}${shapeStr(t.shape)}, declared ${decl.dtype}${shapeStr(decl.shape)}`);
    }
    const buffer = await this.memory.upload(id, tensorWordBytes(t));
    this.buffers.set(id, buffer);
    return buffer;
  }

  private async newValueBuffer(id: ValueId): Promise<GPUBuffer> {
    if (this.buffers.has(id)) throw new Error(`webgpu: value '${id}' is produced twice`);
    const d = this.decl(id);
    const buffer = await this.memory.alloc(id, wordBytesOf(d.dtype, d.shape), STORAGE_USAGE);
    this.buffers.set(id, buffer);
    return buffer;
  }

  private planner(node: GraphNode): (inputs: (TensorInfo | null)[], outputs: (TensorInfo | null)[], attrs: Record<string, unknown>) => KernelPlan {
    const planner = this.kernels[node.op];
    if (!planner) {
      throw new Error(`webgpu: no kernel registered for op '${node.op}' on backend 'webgpu' (node ${node.id} at ${node.scope})`);
    }
    return (inputs, outputs, attrs) => {
      try {
        return planner(inputs, outputs, attrs);
      } catch (e) {
        throw new Error(`webgpu: planning op '${node.op}' (node ${node.id} at ${node.scope}) failed: ${(e as Error).message}`);
      }
    };
  }

  private info(id: ValueId | null): TensorInfo | null {
    if (id === null) return null;
    const d = this.decl(id);
    return { shape: d.shape, dtype: d.dtype };
  }

  /** A host op (OpDef.host): core's CPU kernel on read-back inputs, outputs uploaded. */
  private async runOnHost(node: GraphNode): Promise<void> {
    const inputs = await Promise.all(
      node.inputs.map((id) => (id === null ? null : this.decl(id).kind === 'intermediate' ? this.readBack(id) : this.load(this.decl(id)))),
    );
    const outputs = cpuKernel(node.op)(inputs, node.attrs);
    for (const [i, id] of node.outputs.entries()) {
      if (id === null) continue;
      const t = outputs[i];
      const d = this.decl(id);
      if (!t || t.dtype !== d.dtype || shapeStr(t.shape) !== shapeStr(d.shape)) {
        throw new Error(`webgpu: host op ${node.op} (node ${node.id} at ${node.scope}) produced ${t ? `${t.dtype}${shapeStr(t.shape)}` : 'nothing'} for '${id}', declared ${d.dtype}${shapeStr(d.shape)}`);
      }
      if (this.buffers.has(id)) throw new Error(`webgpu: value '${id}' is produced twice`);
      this.buffers.set(id, await this.memory.upload(id, tensorWordBytes(t)));
    }
  }

  private async runPerRank(node: GraphNode): Promise<void> {
    const plan = this.planner(node)(node.inputs.map((id) => this.info(id)), node.outputs.map((id) => this.info(id)), node.attrs);
    const inputs = await Promise.all(node.inputs.map((id) => (id === null ? null : this.bufferOf(id))));
    const outputs: (GPUBuffer | null)[] = [];
    for (const id of node.outputs) outputs.push(id === null ? null : await this.newValueBuffer(id));
    const encoder = this.device.createCommandEncoder({ label: `${node.op} ${node.scope} rank ${node.rank}` });
    const temps = await this.encodePlan(encoder, node, plan, inputs, outputs);
    this.submit(encoder, temps, `${node.op} (node ${node.id} at ${node.scope}, rank ${node.rank})`);
  }

  /**
   * A collective: the ranks' inputs are copied into one stacked buffer [tp][words] which the
   * planner sees as one tensor [tp, ...perRankShape] (attrs plus `tp`); its result goes to
   * every rank (allReduce, allGather) or, for reduceScatter, rank r gets rows [r*C, (r+1)*C)
   * of the planner's [tp*C, ...] output.
   */
  private async runCollective(node: GraphNode): Promise<void> {
    const tp = this.graph.tp;
    const where = `collective ${node.op} (node ${node.id} at ${node.scope})`;
    if (node.inputs.length !== tp || node.outputs.length !== tp) {
      throw new Error(`webgpu: ${where} needs one input and one output per rank (tp ${tp}), has ${node.inputs.length} / ${node.outputs.length}`);
    }
    const inIds = node.inputs.map((id, r) => {
      if (id === null) throw new Error(`webgpu: ${where} has no input for rank ${r}`);
      return id;
    });
    const outIds = node.outputs.map((id, r) => {
      if (id === null) throw new Error(`webgpu: ${where} has no output for rank ${r}`);
      return id;
    });
    const inDecl = this.decl(inIds[0]);
    const outDecl = this.decl(outIds[0]);
    for (const [ids, d0] of [[inIds, inDecl], [outIds, outDecl]] as const) {
      for (const id of ids) {
        const d = this.decl(id);
        if (d.dtype !== d0.dtype || shapeStr(d.shape) !== shapeStr(d0.shape)) {
          throw new Error(`webgpu: ${where}: value '${id}' is ${d.dtype}${shapeStr(d.shape)}, rank 0's is ${d0.dtype}${shapeStr(d0.shape)}`);
        }
      }
    }
    const scatter = node.op === 'reduceScatter';
    // The planner's output: what every rank gets, or for reduceScatter all tp row blocks.
    const resultShape = scatter ? [outDecl.shape[0] * tp, ...outDecl.shape.slice(1)] : [...outDecl.shape];
    const inRankBytes = numel(inDecl.shape) * bytesPerElement(inDecl.dtype);
    const outRankBytes = numel(outDecl.shape) * bytesPerElement(outDecl.dtype);
    // Stacking and scattering copy whole u32 words per rank: a rank's share must end on a
    // word boundary, or the packed element order of the stacked tensor would not match.
    if (tp > 1 && (inRankBytes % 4 !== 0 || outRankBytes % 4 !== 0)) {
      throw new Error(`webgpu: ${where}: per-rank tensors ${inDecl.dtype}${shapeStr(inDecl.shape)} -> ${outDecl.dtype}${shapeStr(outDecl.shape)} are not whole u32 words`);
    }
    const plan = this.planner(node)(
      [{ shape: [tp, ...inDecl.shape], dtype: inDecl.dtype }],
      [{ shape: resultShape, dtype: outDecl.dtype }],
      { ...node.attrs, tp },
    );
    const inWords = wordBytesOf(inDecl.dtype, inDecl.shape);
    const stacked = await this.memory.alloc(`${node.op} ${node.scope} stacked input`, inWords * tp, STORAGE_USAGE);
    const result = await this.memory.alloc(`${node.op} ${node.scope} result`, wordBytesOf(outDecl.dtype, resultShape), STORAGE_USAGE);
    const rankIns = await Promise.all(inIds.map((id) => this.bufferOf(id)));
    const rankOuts: GPUBuffer[] = [];
    for (const id of outIds) rankOuts.push(await this.newValueBuffer(id));
    const encoder = this.device.createCommandEncoder({ label: `${node.op} ${node.scope}` });
    rankIns.forEach((b, r) => encoder.copyBufferToBuffer(b, 0, stacked, r * inWords, inWords));
    const temps = await this.encodePlan(encoder, node, plan, [stacked], [result]);
    const outWords = wordBytesOf(outDecl.dtype, outDecl.shape);
    rankOuts.forEach((b, r) => encoder.copyBufferToBuffer(result, scatter ? r * outRankBytes : 0, b, 0, outWords));
    this.submit(encoder, [...temps, stacked, result], where);
  }

  /** Encodes a plan's dispatches; returns the scratch and uniform buffers to free after submit. */
  private async encodePlan(
    encoder: GPUCommandEncoder,
    node: GraphNode,
    plan: KernelPlan,
    inputs: (GPUBuffer | null)[],
    outputs: (GPUBuffer | null)[],
  ): Promise<GPUBuffer[]> {
    const temps: GPUBuffer[] = [];
    const scratch = new Map<string, GPUBuffer>();
    try {
      for (const s of plan.scratch) {
        const b = await this.memory.alloc(`${node.op} ${node.scope} scratch '${s.name}'`, Math.max(4, s.words * 4), STORAGE_USAGE);
        temps.push(b);
        scratch.set(s.name, b);
      }
      const maxGroups = this.device.limits.maxComputeWorkgroupsPerDimension;
      const pass = encoder.beginComputePass({ label: `${node.op} ${node.scope}` });
      for (const d of plan.dispatches) {
        const pipeline = await this.pipelines.get(d.key, d.wgsl);
        const entries: GPUBindGroupEntry[] = d.bindings.map((b, i) => {
          const t = b.target;
          const buffer = t.kind === 'input' ? inputs[t.port] : t.kind === 'output' ? outputs[t.port] : scratch.get(t.name);
          if (!buffer) {
            const what = t.kind === 'scratch' ? `undeclared scratch '${t.name}'` : `${t.kind} port ${t.port}, which is absent`;
            throw new Error(`webgpu: kernel '${d.key}' for op '${node.op}' (node ${node.id} at ${node.scope}) binds ${what}`);
          }
          return { binding: i, resource: { buffer } };
        });
        if (d.uniforms.length > 0) {
          const bytes = Math.ceil((d.uniforms.length * 4) / 16) * 16;
          const u = await this.memory.alloc(`${d.key} uniforms`, bytes, BUFFER_UNIFORM | BUFFER_COPY_DST);
          temps.push(u);
          this.device.queue.writeBuffer(u, 0, d.uniforms.buffer, d.uniforms.byteOffset, d.uniforms.byteLength);
          entries.push({ binding: d.bindings.length, resource: { buffer: u } });
        }
        const [x, y, z] = d.workgroups;
        if ([x, y, z].some((g) => !(Number.isInteger(g) && g >= 0 && g <= maxGroups))) {
          throw new Error(`webgpu: kernel '${d.key}' for op '${node.op}' dispatches [${d.workgroups.join(',')}] workgroups; each must be an integer in [0, ${maxGroups}]`);
        }
        if (x * y * z === 0) continue;
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, this.device.createBindGroup({ label: d.key, layout: pipeline.getBindGroupLayout(0), entries }));
        pass.dispatchWorkgroups(x, y, z);
      }
      pass.end();
    } catch (e) {
      for (const b of temps) b.destroy();
      throw e;
    }
    return temps;
  }

  /** Submits one node's work in a validation scope, checked later in a batch. */
  private submit(encoder: GPUCommandEncoder, temps: GPUBuffer[], what: string): void {
    this.device.pushErrorScope('validation');
    this.device.queue.submit([encoder.finish()]);
    const error = this.device.popErrorScope();
    // awaited in awaitChecks(), unless the run fails first: then its rejection (a lost
    // device rejects every pending pop) must not surface as an uncaught page error
    error.catch(() => {});
    this.checks.push({ what, error });
    // destroy() after submit is safe: the buffers live until the submitted work is done
    for (const b of temps) b.destroy();
  }

  private async awaitChecks(): Promise<void> {
    const pending = this.checks.splice(0);
    const errors = await this.guard.race(Promise.all(pending.map((c) => c.error)));
    const i = errors.findIndex((e) => e !== null);
    if (i >= 0) throw new Error(`webgpu (${this.guard.host}): ${pending[i].what} failed validation: ${errors[i]!.message}`);
  }

  /** Frees each value after its last use, unless it was requested. */
  private release(node: GraphNode): void {
    for (const id of node.inputs) {
      if (id === null) continue;
      const left = (this.uses.get(id) ?? 0) - 1;
      this.uses.set(id, left);
      if (left <= 0) this.free(id);
    }
    for (const id of node.outputs) if (id !== null && !this.uses.get(id)) this.free(id);
  }

  private free(id: ValueId): void {
    if (this.requested.has(id)) return;
    this.buffers.get(id)?.destroy();
    this.buffers.delete(id);
  }

  private async readBack(id: ValueId): Promise<Tensor> {
    const d = this.decl(id);
    const buffer = await this.bufferOf(id);
    const bytes = await this.memory.read(id, buffer, wordBytesOf(d.dtype, d.shape));
    return tensorFromWordBytes(d.dtype, d.shape, bytes);
  }
}
