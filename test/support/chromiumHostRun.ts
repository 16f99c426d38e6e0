import type { Graph, RunResult, Tensor, ValueId } from '@hcsp/core';
import type { ChromiumHost, ChromiumRunOptions } from '@hcsp/backend-webgpu';
import { NO_WEIGHTS } from './noWeights.ts';

/** Prepares the graph on the host, runs it once, disposes it. */
export async function runOn(host: ChromiumHost, graph: Graph, feeds: Map<ValueId, Tensor>, options?: ChromiumRunOptions): Promise<RunResult> {
  const prepared = await host.prepare(graph, NO_WEIGHTS);
  try {
    return await prepared.run(feeds, options);
  } finally {
    await prepared.dispose();
  }
}
