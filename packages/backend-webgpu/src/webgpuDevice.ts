/// <reference types="@webgpu/types" />
import { bytesPerElement, numel, shapeStr, type DeviceOps, type GraphNode, type KernelTable, type Tensor, type ValueDecl } from '@hcsp/core';
import type { KernelPlan, KernelPlanner, TensorInfo } from '@hcsp/kernels-wgsl';
import { DeviceLostGuard } from './deviceLostGuard.ts';
import { BUFFER_COPY_DST, BUFFER_COPY_SRC, BUFFER_STORAGE, BUFFER_UNIFORM, GpuMemory } from './gpuMemory.ts';
import { PipelineCache } from './pipelineCache.ts';
import { tensorFromWordBytes, tensorWordBytes, wordBytesOf } from './tensorBytes.ts';

const STORAGE_USAGE = BUFFER_STORAGE | BUFFER_COPY_SRC | BUFFER_COPY_DST;

interface PendingCheck {
  what: string;
  error: Promise<GPUError | null>;
}

/**
 * One GPUDevice (dawn.node in Node, navigator.gpu in a page) as the device of core's
 * execution loop (GraphSession). The tp ranks are simulated on the one device: every
 * rank-owned value has its own buffer; host values (weights, inputs) are uploaded once
 * for all ranks. Collectives stack the ranks' buffers into one [tp][words] buffer and run
 * their planner on it, in lockstep, so nothing can hang on a peer. Each node's work is
 * submitted inside a validation scope; the loop's sync() awaits them in batches.
 */
export class WebGpuDevice implements DeviceOps<GPUBuffer> {
  private readonly guard: DeviceLostGuard;
  private readonly memory: GpuMemory;
  private readonly pipelines: PipelineCache;
  private checks: PendingCheck[] = [];

  constructor(
    private readonly device: GPUDevice,
    private readonly kernels: KernelTable<KernelPlanner>,
    readonly host: string,
  ) {
    this.guard = new DeviceLostGuard(device, host);
    this.memory = new GpuMemory(device, this.guard);
    this.pipelines = new PipelineCache(device, this.guard);
  }

  upload(decl: ValueDecl, t: Tensor): Promise<GPUBuffer> {
    if (t.dtype !== decl.dtype || shapeStr(t.shape) !== shapeStr(decl.shape)) {
      throw new Error(`webgpu: host value '${decl.id}' is ${t.dtype}${shapeStr(t.shape)}, declared ${decl.dtype}${shapeStr(decl.shape)}`);
    }
    return this.memory.upload(decl.id, tensorWordBytes(t));
  }

  async download(decl: ValueDecl, buffer: GPUBuffer): Promise<Tensor> {
    const bytes = await this.memory.read(decl.id, buffer, wordBytesOf(decl.dtype, decl.shape));
    return tensorFromWordBytes(decl.dtype, decl.shape, bytes);
  }

  free(buffer: GPUBuffer): void {
    buffer.destroy();
  }

  /** Raises the validation errors of the work submitted so far (read-backs wait for the work itself). */
  sync(): Promise<void> {
    return this.awaitChecks();
  }

  /** The node's planner, called as is: GraphSession checked every node against its op's declaration (checkNode). */
  private planner(node: GraphNode): (inputs: (TensorInfo | null)[], outputs: (TensorInfo | null)[], attrs: Record<string, unknown>) => KernelPlan {
    const planner = this.kernels.get(node.op);
    return (inputs, outputs, attrs) => {
      try {
        return planner(inputs, outputs, attrs);
      } catch (e) {
        throw new Error(`webgpu: planning op '${node.op}' (node ${node.id} at ${node.scope}) failed: ${(e as Error).message}`);
      }
    };
  }

  private async alloc(decl: ValueDecl): Promise<GPUBuffer> {
    return this.memory.alloc(decl.id, wordBytesOf(decl.dtype, decl.shape), STORAGE_USAGE);
  }

  async runNode(node: GraphNode, inputs: (GPUBuffer | null)[], inDecls: (ValueDecl | null)[], outputs: (ValueDecl | null)[]): Promise<(GPUBuffer | null)[]> {
    const info = (d: ValueDecl | null): TensorInfo | null => (d === null ? null : { shape: d.shape, dtype: d.dtype });
    const plan = this.planner(node)(inDecls.map(info), outputs.map(info), node.attrs);
    const outs: (GPUBuffer | null)[] = [];
    try {
      for (const d of outputs) outs.push(d === null ? null : await this.alloc(d));
      const encoder = this.device.createCommandEncoder({ label: `${node.op} ${node.scope} rank ${node.rank}` });
      const temps = await this.encodePlan(encoder, node, plan, inputs, outs);
      this.submit(encoder, temps, `${node.op} (node ${node.id} at ${node.scope}, rank ${node.rank})`);
    } catch (e) {
      // the loop owns only the buffers it is given back
      for (const b of outs) b?.destroy();
      throw e;
    }
    return outs;
  }

  /**
   * A collective: the ranks' inputs are copied into one stacked buffer [tp][words] which the
   * planner sees as one tensor [tp, ...perRankShape] (attrs plus `tp`); its result goes to
   * every rank (allReduce, allGather) or, for reduceScatter, rank r gets rows [r*C, (r+1)*C)
   * of the planner's [tp*C, ...] output.
   */
  async runCollective(node: GraphNode, inputs: GPUBuffer[][], inDecls: ValueDecl[][], outDecls: ValueDecl[][]): Promise<GPUBuffer[][]> {
    const tp = inputs.length;
    const where = `collective ${node.op} (node ${node.id} at ${node.scope})`;
    if (inputs.some((p) => p.length !== 1) || outDecls.some((p) => p.length !== 1)) {
      throw new Error(`webgpu: ${where} needs one input and one output port per rank`);
    }
    const inDecl = inDecls[0][0];
    const outDecl = outDecls[0][0];
    for (const [ds, d0] of [
      [inDecls, inDecl],
      [outDecls, outDecl],
    ] as const) {
      for (const [d] of ds) {
        if (d.dtype !== d0.dtype || shapeStr(d.shape) !== shapeStr(d0.shape)) {
          throw new Error(`webgpu: ${where}: value '${d.id}' is ${d.dtype}${shapeStr(d.shape)}, rank 0's is ${d0.dtype}${shapeStr(d0.shape)}`);
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
      throw new Error(
        `webgpu: ${where}: per-rank tensors ${inDecl.dtype}${shapeStr(inDecl.shape)} -> ${outDecl.dtype}${shapeStr(outDecl.shape)} are not whole u32 words`,
      );
    }
    const plan = this.planner(node)([{ shape: [tp, ...inDecl.shape], dtype: inDecl.dtype }], [{ shape: resultShape, dtype: outDecl.dtype }], {
      ...node.attrs,
      tp,
    });
    const inWords = wordBytesOf(inDecl.dtype, inDecl.shape);
    const own: GPUBuffer[] = [];
    const rankOuts: GPUBuffer[] = [];
    try {
      const stacked = await this.memory.alloc(`${node.op} ${node.scope} stacked input`, inWords * tp, STORAGE_USAGE);
      own.push(stacked);
      const result = await this.memory.alloc(`${node.op} ${node.scope} result`, wordBytesOf(outDecl.dtype, resultShape), STORAGE_USAGE);
      own.push(result);
      for (const [d] of outDecls) rankOuts.push(await this.alloc(d));
      const encoder = this.device.createCommandEncoder({ label: `${node.op} ${node.scope}` });
      inputs.forEach(([b], r) => {
        encoder.copyBufferToBuffer(b, 0, stacked, r * inWords, inWords);
      });
      const temps = await this.encodePlan(encoder, node, plan, [stacked], [result]);
      const outWords = wordBytesOf(outDecl.dtype, outDecl.shape);
      rankOuts.forEach((b, r) => {
        encoder.copyBufferToBuffer(result, scatter ? r * outRankBytes : 0, b, 0, outWords);
      });
      this.submit(encoder, [...temps, ...own], where);
    } catch (e) {
      for (const b of [...own, ...rankOuts]) b.destroy();
      throw e;
    }
    return rankOuts.map((b) => [b]);
  }

  /**
   * One KernelPlan on raw storage words, outside any graph (kernel tests of WGSL helpers,
   * benchmarks of kernel variants), through the same allocation, binding and dispatch code
   * as the graph's nodes. `reps` > 1 repeats it; seconds are per repetition, submit to done.
   */
  async runPlan(plan: KernelPlan, inputs: (Uint32Array | null)[], outputWords: number[], reps = 1): Promise<{ outputs: Uint32Array[]; seconds: number[] }> {
    const node = { id: -1, op: 'plan', scope: plan.dispatches[0]?.key ?? 'empty plan' };
    const ins: (GPUBuffer | null)[] = [];
    const outs: GPUBuffer[] = [];
    try {
      for (const [i, w] of inputs.entries())
        ins.push(w ? await this.memory.upload(`plan input ${i}`, new Uint8Array(w.buffer, w.byteOffset, Math.max(4, w.byteLength))) : null);
      for (const [i, w] of outputWords.entries()) outs.push(await this.memory.alloc(`plan output ${i}`, Math.max(4, w * 4), STORAGE_USAGE));
      const seconds: number[] = [];
      for (let r = 0; r < reps; r++) {
        const t0 = performance.now();
        const encoder = this.device.createCommandEncoder({ label: `plan ${node.scope}` });
        const temps = await this.encodePlan(encoder, node, plan, ins, outs);
        this.submit(encoder, temps, `plan ${node.scope}`);
        await this.guard.race(this.device.queue.onSubmittedWorkDone());
        seconds.push((performance.now() - t0) / 1000);
      }
      await this.awaitChecks();
      const outputs: Uint32Array[] = [];
      for (const [i, b] of outs.entries()) {
        const bytes = await this.memory.read(`plan output ${i}`, b, Math.max(4, outputWords[i] * 4));
        outputs.push(new Uint32Array(bytes.buffer, bytes.byteOffset, outputWords[i]).slice());
      }
      return { outputs, seconds };
    } finally {
      for (const b of [...ins, ...outs]) b?.destroy();
    }
  }

  /** null when the WGSL compiles into a compute pipeline, else the compiler's messages. */
  async compileErrors(wgsl: string): Promise<string | null> {
    try {
      await new PipelineCache(this.device, this.guard).get('compile check', wgsl);
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  }

  /**
   * Encodes a plan's dispatches; returns the scratch and uniform buffers to free after submit.
   * `node` names them in labels and errors (a graph node, or runPlan's plan outside any graph).
   */
  private async encodePlan(
    encoder: GPUCommandEncoder,
    node: Pick<GraphNode, 'id' | 'scope'> & { op: string },
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
          throw new Error(
            `webgpu: kernel '${d.key}' for op '${node.op}' dispatches [${d.workgroups.join(',')}] workgroups; each must be an integer in [0, ${maxGroups}]`,
          );
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
}
