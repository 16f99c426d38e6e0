import { checkOpInputs } from '../graph/ops/checkOpInputs.ts';
import { getOpDef } from '../graph/ops/registry.ts';
import type { ValueInfo } from '../graph/ops/shapeRules.ts';

// The reference kernels (CPU and float64) called outside a graph: their lookups (cpuKernel,
// exactKernel, ...) wrap each kernel so that a call runs the op's declaration first
// (checkOpInputs: ports present, declared dtypes, attributes, the output rule). In a graph
// the devices read the tables directly: GraphSession checked every node at open (checkNode).
// Kernel bodies assert only what a declaration cannot say (an id inside its table, ranks alike).

type PerRankKernel<T> = (inputs: (T | null)[], attrs: Record<string, unknown>) => (T | null)[];
type CollectiveKernel<T> = (inputs: T[][], attrs: Record<string, unknown>) => T[][];

/** `kernel` of `op`, run only on inputs and attributes its declaration accepts. */
export function checkedKernel<T extends ValueInfo>(op: string, kernel: PerRankKernel<T>): PerRankKernel<T> {
  const def = getOpDef(op);
  return (inputs, attrs) => {
    checkOpInputs(def, inputs, attrs);
    return kernel(inputs, attrs);
  };
}

/**
 * Collective `kernel` of `op`: each rank's inputs checked against the declaration with tp =
 * the number of ranks. `attrs.tp`, which callers may pass along, is not a declared attribute;
 * when given it must be that number.
 */
export function checkedCollectiveKernel<T extends ValueInfo>(op: string, kernel: CollectiveKernel<T>): CollectiveKernel<T> {
  const def = getOpDef(op);
  return (inputs, attrs) => {
    const { tp = inputs.length, ...declared } = attrs;
    if (inputs.length === 0 || tp !== inputs.length) throw new Error(`op ${op}: ${inputs.length} ranks given, tp ${String(tp)}`);
    inputs.forEach((ports, r) => {
      try {
        checkOpInputs(def, ports, declared, inputs.length);
      } catch (e) {
        throw new Error(`rank ${r}: ${(e as Error).message}`);
      }
    });
    return kernel(inputs, attrs);
  };
}
