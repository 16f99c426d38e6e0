// How the GPU check's steps time a kernel: the median of several runs after one warm-up run
// (which takes the first run's costs: the pool's first allocations, a vendor GEMM's planning).
import type { Backend, Graph, WeightSource } from '@hcsp/core';
import { median, timed } from '@hcsp/bench';

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
