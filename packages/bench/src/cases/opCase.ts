// One single-op case of the cross-backend suite: the op, its ranks, inputs and attributes.
import type { OpName, Tensor } from '@hcsp/core';

export interface OpCase {
  name: string;
  op: OpName;
  /** simulated ranks; a collective takes one input list per rank */
  tp: number;
  /** per-rank op: its ports; collective: rank-major (rank 0's ports, then rank 1's, ...) */
  inputs: (Tensor | null)[];
  attrs: Record<string, unknown>;
}
