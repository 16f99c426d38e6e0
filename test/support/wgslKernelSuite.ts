// The shared setup of the WGSL kernel tests (vitest): one headless Chromium WebGPU host per
// test file, the backend's own (so kernels are tested with the buffers, padding and device
// limits the backend uses), ops run as one-node graphs through the backend and compared bit
// for bit with the CPU reference, and raw plans run on the backend's device.
import { CpuBackend, f32ArrayToBf16, getOpDef, GraphBuilder, runOnce, type Graph, type OpName, type Rng, type Tensor, type ValueId } from '@hcsp/core';
import { ChromiumHost } from '@hcsp/backend-webgpu';
import { storageWords, type KernelPlan, type KernelPlanner, type TensorInfo } from '@hcsp/kernels-wgsl';
import { afterAll, beforeAll, expect } from 'vitest';
import { NO_WEIGHTS } from './noWeights.ts';
import { bitDiff, elementBits, tensorBits, tensorInfo, tensorWords, type ElementBits } from './elementBits.ts';

export { bitDiff, elementBits, tensorBits, tensorInfo, tensorWords, type ElementBits };

/** Launches the host before the file's tests and closes it after; call at the top level of a test file. */
export function useChromiumGpu(): () => ChromiumHost {
  let host: ChromiumHost | undefined;
  beforeAll(async () => {
    host = await ChromiumHost.launch();
  }, 90_000);
  afterAll(async () => {
    await host?.close();
  });
  return () => {
    if (!host) throw new Error('useChromiumGpu: the host is not launched (used outside a test?)');
    return host;
  };
}

/**
 * One op as a graph: per-rank ops on rank 0 of tp 1 with `inputs[0]` as the graph inputs; a
 * collective over `inputs.length` ranks, one input list per rank. Outputs are declared by
 * the op's own rule, so the builder also checks the attributes.
 */
export function singleOpGraph(op: OpName, inputs: (Tensor | null)[][], attrs: Record<string, unknown>): { graph: Graph; feeds: Map<ValueId, Tensor> } {
  const def = getOpDef(op);
  const tp = def.collective ? inputs.length : 1;
  if (!def.collective && inputs.length !== 1) throw new Error(`singleOpGraph: ${op} is per-rank: give one input list`);
  const b = new GraphBuilder(tp);
  const feeds = new Map<ValueId, Tensor>();
  const ins = inputs.flatMap((ports, r) =>
    ports.map((t, p) => {
      if (!t) return null;
      const id = b.input(`r${r}.in${p}`, [...t.shape], t.dtype);
      feeds.set(id, t);
      return id;
    }),
  );
  const outs = inputs.flatMap((ports, r) => {
    const rule = def.shape(
      ports.map((t) => (t ? { shape: t.shape, dtype: t.dtype } : null)),
      def.collective ? { ...attrs, tp } : attrs,
    );
    return rule.map((o, p) => (o ? b.value(`r${r}.out${p}`, [...o.shape], o.dtype, r) : null));
  });
  b.node({ op, rank: def.collective ? null : 0, layer: -1, scope: `test.${op}`, inputs: ins, outputs: outs, attrs });
  for (const id of outs) if (id) b.markOutput(id);
  return { graph: b.build(), feeds };
}

/** Expects every present output's element bits equal to the reference tensor's. */
export function expectBitsEqual(op: string, got: (ElementBits | null)[], want: (Tensor | null)[]): void {
  want.forEach((w, i) => {
    if (!w) return;
    const d = bitDiff(got[i]!, tensorBits(w));
    expect(d.differing, `${op} output ${i} [${w.shape.join(',')}]: ${d.differing} of ${w.data.length} differ, ${d.first}`).toBe(0);
  });
}

/**
 * Runs `op` through the WebGPU backend and through the CPU reference, expects identical bits
 * in every output; returns the CPU outputs (rank 0's, or every rank's for a collective, in
 * rank order then port order).
 */
export async function expectOpMatchesCpu(
  host: ChromiumHost,
  op: OpName,
  inputs: (Tensor | null)[] | (Tensor | null)[][],
  attrs: Record<string, unknown>,
): Promise<Tensor[]> {
  const perRank = getOpDef(op).collective ? (inputs as Tensor[][]) : [inputs as (Tensor | null)[]];
  const { graph, feeds } = singleOpGraph(op, perRank, attrs);
  const want = await runOnce(new CpuBackend(), graph, feeds, NO_WEIGHTS);
  const prepared = await host.prepare(graph, NO_WEIGHTS);
  try {
    const got = await prepared.run(feeds);
    const wanted = graph.outputs.map((id) => want.values.get(id)!);
    expectBitsEqual(
      op,
      graph.outputs.map((id) => tensorBits(got.values.get(id)!)),
      wanted,
    );
    return wanted;
  } finally {
    await prepared.dispose();
  }
}

export interface GpuPlanRun {
  /** the output ports' storage words, as the GPU wrote them */
  words: Uint32Array[];
  /** the output ports' element bits (null for an absent port) */
  bits: (ElementBits | null)[];
  seconds: number;
}

/** Runs `plan` once on the backend's device with these port tensors; `outputs` gives each output's shape and dtype. */
export async function runPlanOnGpu(host: ChromiumHost, plan: KernelPlan, inputs: (Tensor | null)[], outputs: (TensorInfo | null)[]): Promise<GpuPlanRun> {
  const outWords = outputs.map((o) =>
    o
      ? storageWords(
          o.dtype,
          o.shape.reduce((a, b) => a * b, 1),
        )
      : 1,
  );
  const run = await host.runPlan(
    plan,
    inputs.map((t) => (t ? tensorWords(t) : null)),
    outWords,
  );
  return { words: run.outputs, bits: run.outputs.map((w, i) => (outputs[i] ? elementBits(w, outputs[i]!) : null)), seconds: run.seconds[0] };
}

/** Plans an op with `planner` for these tensors and runs the plan once. */
export function runPlannerOnGpu(
  host: ChromiumHost,
  planner: KernelPlanner,
  inputs: (Tensor | null)[],
  outputs: (TensorInfo | null)[],
  attrs: Record<string, unknown>,
): Promise<GpuPlanRun> {
  return runPlanOnGpu(
    host,
    planner(
      inputs.map((t) => (t ? tensorInfo(t) : null)),
      outputs,
      attrs,
    ),
    inputs,
    outputs,
  );
}

/** A bf16 tensor of normal samples bf(mean + std * N(0, 1)) (bf(std * N(0, 1)) when mean is 0). */
export function bf16Normal(rng: Rng, shape: number[], std: number, mean = 0): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = mean === 0 ? rng.fillBf16Normal(n, std) : f32ArrayToBf16(Array.from({ length: n }, () => mean + std * rng.normal()));
  return { dtype: 'bf16', shape, data };
}
