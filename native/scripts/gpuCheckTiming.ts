// How the GPU check's steps time a kernel and judge it: the median of several runs after one
// warm-up run (which takes the first run's costs: the pool's first allocations, a vendor GEMM's
// planning), one launch of a chained op, and a time against the matrix ceiling.
import { FLASH_NEXT, type Backend, type Graph, type ModelConfig, type WeightSource } from '@hcsp/core';
import { median, timed } from '@hcsp/bench';
import type { Verdict } from './gpuCheckVerdict.ts';

/** The median seconds of `runs` calls of `once`, after one warm-up call. */
export async function warmMedianSeconds(runs: number, once: () => Promise<unknown>): Promise<number> {
  await once();
  return median(await timed(runs, once));
}

/** The median seconds of `runs` runs of a graph without feeds, prepared once on `backend`, after a warm-up run. */
export async function medianRunSeconds(backend: Backend, graph: Graph, weights: WeightSource, runs: number): Promise<number> {
  const prepared = await backend.prepare(graph, weights);
  try {
    return await warmMedianSeconds(runs, () => prepared.run(new Map()));
  } finally {
    await prepared.dispose();
  }
}

/**
 * One launch's seconds of an op timed as a chain: a graph of `reps` launches less a graph of one
 * (which carries the inputs' setup and the read-back), over reps - 1. A negative difference (noise
 * on a tiny run) stays negative: the verdicts fail it.
 */
export async function perLaunchSeconds(
  backend: Backend,
  chain: (reps: number) => { graph: Graph; weights: WeightSource },
  reps: number,
  runs: number,
): Promise<number> {
  const time = async (n: number): Promise<number> => {
    const { graph, weights } = chain(n);
    return medianRunSeconds(backend, graph, weights, runs);
  };
  return ((await time(reps)) - (await time(1))) / (reps - 1);
}

/** A kernel's seconds against its math at the matrix ceiling measured in the same run: it passes within `factor` times that. */
export function matrixCeilingVerdict(op: string, seconds: number, flops: number, bytes: number, matrixTflops: number, factor: number): Verdict {
  const tflops = flops / seconds / 1e12;
  const times = seconds / (flops / (matrixTflops * 1e12));
  const pass = Number.isFinite(times) && times > 0 && times <= factor;
  const line =
    `  ${op} ${seconds.toFixed(6).padStart(9)} s ${tflops.toFixed(2).padStart(8)} TFLOP/s ${(bytes / seconds / 1e9).toFixed(1).padStart(8)} GB/s  ` +
    `${times.toFixed(2)}x its math at ${matrixTflops.toFixed(1)} TFLOP/s  ${pass ? 'pass' : `FAIL (over ${factor}x)`}`;
  return { line, pass };
}

/** A kernel chained in one graph and judged against the matrix ceiling (the attention and GDN steps). */
export interface CeilingKernel {
  op: string;
  /** the kernel passes within this factor of its math at the matrix ceiling */
  factor: number;
  /** the graph that chains the kernel `reps` times on T rows of config */
  chain: (config: ModelConfig, T: number, reps: number) => { graph: Graph; weights: WeightSource };
  flops: (config: ModelConfig, T: number) => number;
  minBytes: (config: ModelConfig, T: number) => number;
  /** the step's header line */
  header: (config: ModelConfig, T: number, flops: number) => string;
}

/** The step: one launch's seconds (a reps chain less a one-launch chain, over reps - 1) against the matrix ceiling; the header first. */
export async function matrixCeilingStep(
  backend: Backend,
  matrixTflops: number,
  kernel: CeilingKernel,
  options: { config?: ModelConfig; T?: number; reps?: number; runs?: number } = {},
): Promise<Verdict[]> {
  const config = options.config ?? FLASH_NEXT;
  const T = options.T ?? 4096;
  const reps = Math.max(2, options.reps ?? 6);
  const runs = options.runs ?? 5;
  const seconds = await perLaunchSeconds(backend, (n) => kernel.chain(config, T, n), reps, runs);
  const flops = kernel.flops(config, T);
  return [
    { line: kernel.header(config, T, flops), pass: true },
    { ...matrixCeilingVerdict(kernel.op, seconds, flops, kernel.minBytes(config, T), matrixTflops, kernel.factor), seconds },
  ];
}
