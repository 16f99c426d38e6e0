// Whether one forward fits a device (`hcsp model`): rank 0's part of the graph the cost model
// prices (model/decoderGraph.ts, built without tensors), its activations at the engine's own
// peak (graph/memoryPlan.ts: the most bytes of values alive at once in the node loop) and the
// weights it holds, against the device's memory. Rows of the PLE table read from the host as
// the ids need them are not held.
import { bytesPerElement, numel, planMemory, rankGraph, type ModelConfig } from '@hcsp/core';
import { buildCostGraph, hcspScratchPeak, type KernelsMode, type GraphVariant } from '@hcsp/core/cost-model';

export interface DeviceFit {
  /** the most activation bytes alive at once on rank 0 */
  activationBytes: number;
  /** weight bytes rank 0 holds */
  weightBytes: number;
  /** with --engine hcsp: the most scratch one of its kernels allocates (engines/hcspKernels.ts), counted on top of the peak */
  scratchBytes: number;
  /** activations, scratch and weights within the device's memory */
  fits: boolean;
}

/** `memoryBytes`: the device's memory (figures.memoryGB x 1e9) */
/** `hcspKernels`: price hcsp's engine in that kernels mode (its kernels' scratch counted); absent: the roofline engine (none) */
export function deviceFit(
  config: ModelConfig,
  tokens: number,
  tp: number,
  sp: 'off' | 'on',
  mtp: boolean,
  memoryBytes: number,
  variant: GraphVariant = {},
  hcspKernels?: KernelsMode,
): DeviceFit {
  const { graph } = buildCostGraph(config, tokens, tp, sp, mtp, {}, variant);
  const part = rankGraph(graph, 0);
  const activationBytes = planMemory(part).peakBytes;
  let weightBytes = 0;
  for (const v of Object.values(part.values)) {
    if (v.kind === 'weight' && v.weight?.gather !== 'rows') weightBytes += numel(v.shape) * bytesPerElement(v.dtype);
  }
  const scratchBytes = hcspKernels ? hcspScratchPeak(part.nodes, { config, tp, values: part.values, requests: 1, requestTokens: tokens }, hcspKernels) : 0;
  return { activationBytes, weightBytes, scratchBytes, fits: activationBytes + scratchBytes + weightBytes <= memoryBytes };
}
